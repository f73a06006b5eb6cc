import TaskLoopCore

// The events the registry's core sends, each returning what the core must do. The only code
// that moves the machine's fields (they are internal, not private, so that this file may).
extension TaskStateMachine {
    // MARK: - What the core does

    /// A phase to publish for one generation.
    struct PhaseChange {
        let generation: UInt64
        let phase: Phase
    }

    /// The next step for the pending generation, after an event moved it.
    enum StartStep: Equatable {
        /// Nothing to do: nothing pending, or already held where it is.
        case none
        /// Push a debounce entry for `deadline`.
        case waitForDebounce(deadline: UInt64)
        /// Arm the task's throttle timer for `until`.
        case waitForThrottle(until: UInt64)
        /// Nothing to arm: the end of a previous run releases it.
        case waitForPrevious
        /// Append the record to the start queue (it was not in it; it is now).
        case queueStart
        /// Count `attempt` as the generation's next, arm the task's retry timer for its wait,
        /// and give the record its action back.
        case waitForRetry(attempt: Int)
    }

    /// What the core carries out after an event, in this order: stop the throttle timer,
    /// cancel the Swift task, publish `endedPending`, `endedRun`, take `next`, publish `waiting`.
    struct Effects {
        /// The pending generation was held by throttle and no longer is: stop its timer.
        var stopThrottleTimer = false
        /// The current run was cancelled, and what that asks of the core.
        var cancelled = CancelledRun.none
        /// The current run ended (or was cancelled): drop its task handle.
        var dropTask = false
        /// A pending generation that ended without starting.
        var endedPending: PhaseChange?
        /// The current run that ended or was cancelled.
        var endedRun: PhaseChange?
        var next = StartStep.none
        /// `waiting`, published once when the latest generation starts waiting.
        var waiting: PhaseChange?
        /// The pending generation's action is no longer needed (it ended or was replaced).
        var dropPendingAction = false
        /// The current run was a delayed synchronous run, cancelled before its action was
        /// called: it stopped running now, where other runs stop when their action returns.
        var actionNeverCalled = false
    }

    /// What cancelling the current run asks of the core. Each but `none` first marks the run
    /// no longer current in its record's word (`RunNotes`).
    enum CancelledRun: UInt8 {
        case none
        /// Its own Swift task, for a new identity: cancel it and drop the handle.
        case task
        /// Its own Swift task, for another reason: note the reason, then as `task` (apart from
        /// W1's path, where every cancellation is for a new identity).
        case taskForAReason
        /// A synchronous action executing now (it cancelled its own run): note the reason.
        case synchronousRun
        /// A shared run (`sharedTask`): the slot leaves it, and the last to leave cancels its
        /// task.
        case sharedRun
    }

    /// The conditions a pending generation may start under.
    struct StartGate {
        var policy: PolicyKind
        /// The end of the throttle window since the last start; 0 when not throttled.
        var throttleReadyAt: UInt64
        var now: UInt64

        /// For an event that starts nothing (a declaration of an equal identity).
        static let unused = StartGate(policy: .cancelPrevious, throttleReadyAt: 0, now: 0)
    }

    // MARK: - Events

    /// A declaration. `changed` is false for an identity equal (`==`) to the current one, which
    /// changes nothing. Otherwise a new generation begins: a generation still pending ends
    /// superseded, the current run is cancelled unless the policy keeps it, and the new one
    /// waits out `debounce` (nanoseconds; 0 for none) or goes to the start gate.
    @inline(__always)
    mutating func declare(
        changed: Bool, debounce: UInt64, gate: StartGate, counters: inout RegistryCounters
    ) -> Effects {
        if case .removed = stage { impossible("declare") }
        counters.declared &+= 1
        guard changed else {
            counters.unchanged &+= 1
            return Effects()
        }
        var effects = Effects()
        generation &+= 1
        phase = .idle
        counters.liveGenerations &+= 1
        var run: ActiveRun?
        switch stage {
        case .quiet, .removed:
            run = nil
        case .running(let current):
            run = current
        case .waiting(let waiting):
            supersedePending(
                wasThrottled: waiting.isThrottled, wasLimited: waiting.isStartLimited, into: &effects,
                counters: &counters)
            run = nil
        case .heldBesideRun(let held, let current):
            supersedePending(wasThrottled: held.isThrottled, into: &effects, counters: &counters)
            run = current
        }
        if !gate.policy.keepsRun, let current = run {
            cancelRun(current, reason: .identityChanged, into: &effects, counters: &counters)
            run = nil
        }
        if debounce > 0 {
            let deadline = LoopInstant.nanoseconds(gate.now, plus: debounce)
            hold(.debouncing(deadline: deadline), beside: run)
            phase = .waiting
            effects.next = .waitForDebounce(deadline: deadline)
            effects.waiting = PhaseChange(generation: generation, phase: .waiting)
            return effects
        }
        advancePending(beside: run, gate, into: &effects)
        return effects
    }

    /// A debounce entry came due. Stale unless the generation still waits for that deadline.
    @inline(__always)
    mutating func debounceDue(deadline: UInt64, gate: StartGate) -> Effects {
        var effects = Effects()
        switch stage {
        case .waiting(.held(.debouncing(let waitingFor))) where waitingFor == deadline:
            advancePending(beside: nil, gate, into: &effects)
        case .heldBesideRun(.debouncing(let waitingFor), let run) where waitingFor == deadline:
            advancePending(beside: run, gate, into: &effects)
        default:
            break
        }
        return effects
    }

    /// The retry timer fired. Stale unless the generation still waits to be tried again (the
    /// timer is the task's own, re-armed for each wait); it then goes through the start gate,
    /// as any pending generation.
    mutating func retryDue(gate: StartGate) -> Effects {
        var effects = Effects()
        if case .waiting(.retrying) = stage { advancePending(beside: nil, gate, into: &effects) }
        return effects
    }

    /// The throttle timer fired. Stale unless a generation is held by throttle.
    @inline(__always)
    mutating func throttleDue(gate: StartGate) -> Effects {
        var effects = Effects()
        switch stage {
        case .waiting(.held(.throttled)):
            advancePending(beside: nil, gate, into: &effects)  // re-arms if the window still holds
        case .heldBesideRun(.throttled, let run):
            advancePending(beside: run, gate, into: &effects)
        default:
            break
        }
        return effects
    }

    /// The start pass reached this record. Returns the generation to start, or nil when the
    /// queued generation has since moved on (superseded into a debounce, or removed).
    @inline(__always)
    mutating func startAllowed(kind: ActiveKind, counters: inout RegistryCounters) -> UInt64? {
        check(inStartQueue, "startAllowed")
        inStartQueue = false
        guard case .waiting(.startQueued) = stage else { return nil }
        counters.started &+= 1
        // A retry starts the generation that ran last again: not a restart.
        if hasStarted && runGeneration != generation { counters.restarted &+= 1 }
        hasStarted = true
        runGeneration = generation
        counters.runningActions &+= 1
        stage = .running(ActiveRun(kind: kind))
        phase = .running
        return generation
    }

    /// The run that just started (`startAllowed`, as a `task`) is a shared run: its template
    /// shares runs, and it leads one or joins one (`sharedTask`). Apart from `startAllowed`, so
    /// that starting any other run decides nothing more (about 10 instructions a W1 change).
    mutating func runIsShared() {
        guard case .running(var run) = stage, run.kind == .task else { impossible("runIsShared") }
        run.kind = .sharedTask
        stage = .running(run)
    }

    /// A run of the concurrency limit ended and this generation, at the head of its queue,
    /// may start: it is queued to start, and the core starts it at once (`startAllowed`).
    mutating func admitted(counters: inout RegistryCounters) {
        guard case .waiting(.startLimited) = stage else { impossible("admitted") }
        counters.queueLength &-= 1
        stage = .waiting(.startQueued)
        inStartQueue = true
    }

    /// A delayed synchronous run's delay elapsed: whether to call its action now (false when
    /// the run was cancelled meanwhile, which ended it).
    mutating func synchronousRunDue(generation: UInt64) -> Bool {
        guard isCurrentRun(generation) else { return false }
        switch stage {
        case .running(var run):
            check(run.kind == .synchronousDelayed, "synchronousRunDue")
            run.kind = .synchronousExecuting
            stage = .running(run)
        case .heldBesideRun(let held, var run):
            check(run.kind == .synchronousDelayed, "synchronousRunDue")
            run.kind = .synchronousExecuting
            stage = .heldBesideRun(held, run)
        case .quiet, .waiting, .removed:
            break  // not current: returned above
        }
        return true
    }

    /// A run's action ended: its Swift task returned, or its synchronous action was called.
    /// The current run ends with `outcome`; a cancelled one only stops being counted. A
    /// generation waiting for it may then start.
    /// `attempts` are those of the current run's generation under its task's retry policy
    /// (`.none` without one): a failed current run with nothing pending beside it and an
    /// attempt left does not end, but waits to be tried again (`retrying`), its generation
    /// still live.
    @inline(__always)
    mutating func runEnded(
        generation: UInt64, outcome: Outcome, isShutDown: Bool, attempts: Attempts = .none, gate: StartGate,
        counters: inout RegistryCounters
    ) -> Effects {
        var effects = Effects()
        counters.runningActions &-= 1
        var run: ActiveRun?
        var held: Held?
        switch stage {
        case .running(let current): run = current
        case .heldBesideRun(let waiting, let current): (run, held) = (current, waiting)
        case .waiting(.held(let waiting)): held = waiting
        case .quiet, .waiting(.startQueued), .waiting(.startLimited), .waiting(.retrying), .removed: break
        }
        if let current = run, runGeneration == generation, attempts.made < attempts.allowed, case .failed = outcome,
            held == nil
        {
            check(current.kind != .synchronousDelayed, "runEnded")
            stage = .waiting(.retrying)
            effects.dropTask = true
            counters.retries &+= 1
            phase = .waiting
            effects.waiting = PhaseChange(generation: generation, phase: .waiting)
            effects.next = .waitForRetry(attempt: attempts.made + 1)
            return effects
        }
        if let current = run, runGeneration == generation {
            check(current.kind != .synchronousDelayed, "runEnded")
            run = nil
            stage = held.map { .waiting(.held($0)) } ?? .quiet
            effects.dropTask = true
            counters.liveGenerations &-= 1
            let ended: Phase
            switch outcome {
            case .finished:
                counters.finished &+= 1
                ended = .finished
            case .cancelled:
                counters.cancelled &+= 1
                ended = .cancelled(isShutDown ? .registryShutDown : .actionCancelled)
            case .failed:
                counters.failed &+= 1
                ended = .failed
            }
            setPhase(ended, of: generation)
            effects.endedRun = PhaseChange(generation: generation, phase: ended)
        } else {
            check(endingRuns > 0, "runEnded")
            endingRuns &-= 1
        }
        if case .awaitingPrevious? = held { advancePending(beside: run, gate, into: &effects) }
        return effects
    }

    /// A task new in its slot takes over `count` runs still ending from the removed task of
    /// the same slot and name, so that `awaitPrevious` and `keepRunning` wait for them too.
    mutating func inheritEndingRuns(_ count: Int32) {
        check(generation == 0 && endingRuns == 0 && count > 0, "inheritEndingRuns")
        endingRuns = count
    }

    /// One of the runs taken over with `inheritEndingRuns` ended (it is counted, and its phase
    /// published, by the removed task it belongs to).
    mutating func previousRunEnded(gate: StartGate) -> Effects {
        check(endingRuns > 0, "previousRunEnded")
        endingRuns &-= 1
        var effects = Effects()
        switch stage {
        case .waiting(.held(.awaitingPrevious)): advancePending(beside: nil, gate, into: &effects)
        case .heldBesideRun(.awaitingPrevious, let run): advancePending(beside: run, gate, into: &effects)
        default: break
        }
        return effects
    }

    /// The slot is gone (`reason` `.removed`), or the registry shuts down
    /// (`.registryShutDown`): the pending generation and the current run end cancelled, and
    /// only runs already cancelled are left to end.
    mutating func remove(reason: CancellationReason, counters: inout RegistryCounters) -> Effects {
        var effects = Effects()
        endPendingAndRun(reason: reason, event: "remove", into: &effects, counters: &counters)
        stage = .removed
        return effects
    }

    /// The caller cancels the task in place (`TaskRegistry.cancel`): as `remove`, but the task
    /// stays declared, and a later declaration starts it again.
    mutating func cancelByCaller(counters: inout RegistryCounters) -> Effects {
        var effects = Effects()
        endPendingAndRun(reason: .cancelledByCaller, event: "cancelByCaller", into: &effects, counters: &counters)
        stage = .quiet
        return effects
    }

    /// The caller drops the generation that has not started (`TaskRegistry.dropPending`); a
    /// current run goes on.
    mutating func dropPending(reason: CancellationReason, counters: inout RegistryCounters) -> Effects {
        var effects = Effects()
        switch stage {
        case .removed:
            impossible("dropPending")
        case .quiet, .running:
            break
        case .waiting(let waiting):
            endPending(
                wasThrottled: waiting.isThrottled, wasLimited: waiting.isStartLimited, reason: reason,
                into: &effects, counters: &counters)
            stage = .quiet
        case .heldBesideRun(let held, let run):
            endPending(wasThrottled: held.isThrottled, reason: reason, into: &effects, counters: &counters)
            stage = .running(run)
        }
        return effects
    }

    /// The caller closes the debounce or throttle window early (`TaskRegistry.runNow`): the
    /// generation waiting in it goes to the start gate, without the throttle but still under
    /// the restart policy. Nothing happens when no generation waits in such a window.
    mutating func runNow(gate: StartGate) -> Effects {
        var effects = Effects()
        var open = gate
        open.throttleReadyAt = 0
        switch stage {
        case .removed:
            impossible("runNow")
        case .waiting(.held(.debouncing)):
            advancePending(beside: nil, open, into: &effects)
        case .waiting(.held(.throttled)):
            effects.stopThrottleTimer = true
            advancePending(beside: nil, open, into: &effects)
        case .heldBesideRun(.debouncing, let run):
            advancePending(beside: run, open, into: &effects)
        case .heldBesideRun(.throttled, let run):
            effects.stopThrottleTimer = true
            advancePending(beside: run, open, into: &effects)
        case .quiet, .waiting, .running, .heldBesideRun:
            break
        }
        return effects
    }

    /// The run `generation` passed its time limit (`timeout:`). If it is still the current run
    /// it is cancelled for `timedOut`: a Swift task is left to end, a delayed synchronous
    /// action is never called. A generation pending beside it stays pending; one awaiting the
    /// previous run then goes on as after any cancelled run. Nothing happens for a run that is
    /// no longer current. A synchronous action that is executing cannot time out: it holds the
    /// loop thread, where the time limit's timer fires.
    mutating func runTimedOut(generation: UInt64, gate: StartGate, counters: inout RegistryCounters) -> Effects {
        var effects = Effects()
        guard isCurrentRun(generation) else { return effects }
        switch stage {
        case .running(let run):
            check(run.kind != .synchronousExecuting, "runTimedOut")
            cancelRun(run, reason: .timedOut, into: &effects, counters: &counters)
            counters.timedOut &+= 1
            stage = .quiet
        case .heldBesideRun(let held, let run):
            check(run.kind != .synchronousExecuting, "runTimedOut")
            cancelRun(run, reason: .timedOut, into: &effects, counters: &counters)
            counters.timedOut &+= 1
            stage = .waiting(.held(held))
            if case .awaitingPrevious = held { advancePending(beside: nil, gate, into: &effects) }
        case .quiet, .waiting, .removed:
            break  // not current: returned above
        }
        return effects
    }

    /// The current run's progress delay elapsed: whether to turn its progress signal on now.
    @inline(__always)
    mutating func progressDue(generation: UInt64) -> Bool {
        guard runGeneration == generation else { return false }
        switch stage {
        case .running(var run) where !run.showsProgress:
            run.showsProgress = true
            stage = .running(run)
        case .heldBesideRun(let held, var run) where !run.showsProgress:
            run.showsProgress = true
            stage = .heldBesideRun(held, run)
        default:
            return false
        }
        return true
    }
}
