import TaskLoopCore

// The steps the events share, and the invariants checked after each event.
extension TaskStateMachine {
    // MARK: - Steps shared by events

    /// A pending generation ends superseded by a newer declaration: it never runs. One that
    /// ran before (a failed run waiting to be tried again, or on its way to its next attempt)
    /// ends as its run would have, cancelled for the new identity, not coalesced.
    @inline(__always)
    mutating func supersedePending(
        wasThrottled: Bool, wasLimited: Bool = false, into effects: inout Effects, counters: inout RegistryCounters
    ) {
        effects.stopThrottleTimer = wasThrottled
        if wasLimited { counters.queueLength &-= 1 }
        counters.liveGenerations &-= 1
        if hasStarted && runGeneration == generation &- 1 {
            counters.cancelled &+= 1
            effects.endedPending = PhaseChange(generation: generation &- 1, phase: .cancelled(.identityChanged))
            return
        }
        counters.coalesced &+= 1
        effects.endedPending = PhaseChange(generation: generation &- 1, phase: .cancelled(.supersededByPolicy))
    }

    /// Ends the pending generation cancelled for `reason`: it never runs. The caller sets the
    /// stage.
    @inline(__always)
    mutating func endPending(
        wasThrottled: Bool, wasLimited: Bool = false, reason: CancellationReason, into effects: inout Effects,
        counters: inout RegistryCounters
    ) {
        effects.stopThrottleTimer = wasThrottled
        if wasLimited { counters.queueLength &-= 1 }
        effects.dropPendingAction = true
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        setPhase(.cancelled(reason), of: generation)
        effects.endedPending = PhaseChange(generation: generation, phase: .cancelled(reason))
    }

    /// Ends the pending generation and cancels the current run, whichever exist, for
    /// `reason`. The caller sets the stage.
    mutating func endPendingAndRun(
        reason: CancellationReason, event: StaticString, into effects: inout Effects,
        counters: inout RegistryCounters
    ) {
        switch stage {
        case .removed:
            impossible(event)
        case .quiet:
            break
        case .waiting(let waiting):
            endPending(
                wasThrottled: waiting.isThrottled, wasLimited: waiting.isStartLimited, reason: reason,
                into: &effects, counters: &counters)
        case .running(let run):
            cancelRun(run, reason: reason, into: &effects, counters: &counters)
        case .heldBesideRun(let held, let run):
            endPending(wasThrottled: held.isThrottled, reason: reason, into: &effects, counters: &counters)
            cancelRun(run, reason: reason, into: &effects, counters: &counters)
        }
    }

    /// Cancels the current run `run`: a Swift task or an executing action is left to end, a
    /// delayed synchronous action is never called. The caller sets the stage.
    @inline(__always)
    mutating func cancelRun(
        _ run: ActiveRun, reason: CancellationReason, into effects: inout Effects, counters: inout RegistryCounters
    ) {
        switch run.kind {
        case .task:
            endingRuns &+= 1
            effects.cancelled = reason == .identityChanged ? .task : .taskForAReason
        case .sharedTask:
            endingRuns &+= 1  // ends when the shared task does
            effects.cancelled = .sharedRun
        case .synchronousExecuting:
            endingRuns &+= 1  // ends when its action returns
            effects.dropTask = true
            effects.cancelled = .synchronousRun
        case .synchronousDelayed:
            counters.runningActions &-= 1  // its action is never called
            effects.dropTask = true
            effects.actionNeverCalled = true
        }
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        setPhase(.cancelled(reason), of: runGeneration)
        effects.endedRun = PhaseChange(generation: runGeneration, phase: .cancelled(reason))
    }

    /// The stage with the latest generation held for `held`, beside `run` if there is one.
    @inline(__always)
    mutating func hold(_ held: Held, beside run: ActiveRun?) {
        if let run { stage = .heldBesideRun(held, run) } else { stage = .waiting(.held(held)) }
    }

    /// Moves the latest generation, pending beside `run` (the current run, if any), through
    /// the gate: throttle, then the restart policy, then the start queue.
    @inline(__always)
    mutating func advancePending(beside run: ActiveRun?, _ gate: StartGate, into effects: inout Effects) {
        if hasStarted && gate.throttleReadyAt > gate.now {
            hold(.throttled, beside: run)
            effects.next = .waitForThrottle(until: gate.throttleReadyAt)
            publishWaitingOnce(into: &effects)
            return
        }
        let mustWait: Bool
        switch gate.policy {
        case .cancelPrevious, .keepRunningDropNew: mustWait = false
        case .awaitPrevious: mustWait = endingRuns > 0
        case .keepRunning, .appendInOrder: mustWait = run != nil || endingRuns > 0
        }
        if mustWait {
            hold(.awaitingPrevious, beside: run)
            effects.next = .waitForPrevious
            publishWaitingOnce(into: &effects)
            return
        }
        // A generation is queued to start only once no run is current.
        check(run == nil, "advancePending")
        stage = .waiting(.startQueued)
        // Until the pass, the phase reads `waiting`, unpublished: it lasts less than a turn.
        if phase == .idle { phase = .waitingUnpublished }
        if !inStartQueue {
            inStartQueue = true
            effects.next = .queueStart
        }
    }

    @inline(__always)
    mutating func publishWaitingOnce(into effects: inout Effects) {
        if phase == .waiting { return }
        phase = .waiting
        effects.waiting = PhaseChange(generation: generation, phase: .waiting)
    }

    /// A phase change is the task's phase only for the latest generation.
    @inline(__always)
    mutating func setPhase(_ newPhase: Phase, of changed: UInt64) {
        if changed == generation { phase = newPhase }
    }

    /// Traps, printing the state, when an event arrives that the rules rule out.
    @inline(__always)
    func check(_ condition: Bool, _ event: StaticString) {
        if !condition { impossible(event) }
    }

    @inline(never)
    func impossible(_ event: StaticString) -> Never {
        fatalError("BUG DETECTED: event \(event) is impossible in \(self)")
    }

    // MARK: - Invariants

    /// The rules between the stage and the fields beside it, which the stage's type cannot
    /// hold (checked after each event by the internal-checks build, and by the state-machine
    /// tests). Returns the first one broken.
    func brokenInvariant() -> String? {
        if endingRuns < 0 { return "endingRuns < 0" }
        if run != .none && runGeneration > generation { return "runGeneration > generation" }
        if pending == .startQueued && !inStartQueue { return "queued to start but not in the start queue" }
        if case .heldBesideRun = stage, runGeneration == generation {
            return "the current run's generation is also pending"
        }
        if pending != .none && generation == 0 { return "pending with no generation" }
        return nil
    }
}
