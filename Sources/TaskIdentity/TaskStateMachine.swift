import UVLoop

/// The life of one task of one slot, as a pure state machine: one `mutating func` per event,
/// each returning what the registry's core must do. The core owns the side effects (Swift
/// tasks, deadline queues, throttle timers, phase streams); this type owns the rules, the
/// phase, and every counter move, so that the counter invariant holds by construction.
///
/// Two stages, each a small enum, make up the state (see docs/state-machine.md for the diagram):
///
/// - `pending`: the latest generation while it has not started: waiting out its debounce, held
///   by throttle, waiting for a previous run to end, or queued for this turn's start pass.
/// - `run`: the current run: a Swift task, or a synchronous run before or inside its action.
///
/// Both can be occupied at once (a `keepRunning` task runs while its next identity waits).
/// Cancelled runs that have not ended yet are counted in `endingRuns`; a removed task keeps
/// only them. An event that cannot happen in the current state is a bug in the registry: it
/// traps and prints the state.
///
/// Loop thread only (a value inside a loop-confined record).
@usableFromInline
struct TaskStateMachine: Sendable, CustomStringConvertible {
    /// Where the latest generation stands while it has not started.
    @usableFromInline
    enum Pending: UInt8, Sendable {
        /// No generation waits: the latest one is running, has ended, or none was declared.
        case none
        /// Waiting out its debounce window (`debounceDeadline`).
        case debouncing
        /// Held until the throttle window since the last start closes.
        case throttled
        /// Waiting for a previous run to end (`awaitPrevious`, `keepRunning`).
        case awaitingPrevious
        /// Starts in this turn's start pass.
        case startQueued
    }

    /// The current run: the one whose results may still land.
    @usableFromInline
    enum Run: UInt8, Sendable {
        /// No current run.
        case none
        /// A Swift task.
        case task
        /// A synchronous run waiting out its delay; its action has not been called.
        case synchronousDelayed
        /// A synchronous run whose action is executing now, on the loop thread.
        case synchronousExecuting
    }

    /// What starts when the start pass reaches a queued generation.
    enum RunKind: Sendable {
        case task
        case synchronousDelayed
        case synchronousNow
    }

    /// How a run's action ended (a failure's error stays with the core).
    enum Outcome {
        case finished
        case cancelled
        case failed
    }

    /// `TaskPhase` without the error of `failed`, so that the machine and its effects stay
    /// plain values: copying them never retains, and never calls out of line.
    @usableFromInline
    enum Phase: Equatable, Sendable, CustomStringConvertible {
        case idle, waiting, running, finished, failed
        case cancelled(CancellationReason)

        /// The public phase; `failure` is the error of a `failed` one.
        func taskPhase(failure: (any Error)?) -> TaskPhase {
            switch self {
            case .idle: return .idle
            case .waiting: return .waiting
            case .running: return .running
            case .finished: return .finished
            // The error is stored with the phase while the task is in its slot.
            case .failed: return .failed(failure ?? UnrecordedFailure())
            case .cancelled(let reason): return .cancelled(reason)
            }
        }

        @usableFromInline var description: String {
            switch self {
            case .idle: return "idle"
            case .waiting: return "waiting"
            case .running: return "running"
            case .finished: return "finished"
            case .failed: return "failed"
            case .cancelled(let reason): return "cancelled(\(reason))"
            }
        }
    }

    // Field order is cache order: `isCurrentRun` (every commit) reads `runGeneration` and
    // `run`, which then share the record's first cache line with its header.
    /// The generation of the current run (or the last one started).
    private(set) var runGeneration: UInt64 = 0
    /// How many identities the task has had in its slot's lifetime.
    private(set) var generation: UInt64 = 0
    /// The phase of the latest generation.
    private(set) var phase: Phase = .idle
    /// Cancelled runs (Swift tasks, or a synchronous action cancelled from inside) that have
    /// not ended yet.
    private(set) var endingRuns: Int32 = 0
    private(set) var pending: Pending = .none
    private(set) var run: Run = .none
    private(set) var isRemoved = false
    /// A run has started in this slot's lifetime (throttle and `restarted` count from it).
    private(set) var hasStarted = false
    /// The delayed progress signal of the current run is on.
    private(set) var showsProgress = false
    /// The record is in the core's start queue (possibly no longer `startQueued`).
    private(set) var inStartQueue = false
    /// The deadline of the debounce window being waited out (valid while `debouncing`).
    private(set) var debounceDeadline: UInt64 = 0

    init() {}

    /// Whether `generation` is the current run's.
    @inline(__always)
    func isCurrentRun(_ generation: UInt64) -> Bool {
        run != .none && runGeneration == generation
    }

    @usableFromInline var description: String {
        "TaskStateMachine(generation: \(generation), runGeneration: \(runGeneration), pending: \(pending), "
            + "run: \(run), endingRuns: \(endingRuns), removed: \(isRemoved), hasStarted: \(hasStarted), "
            + "showsProgress: \(showsProgress), inStartQueue: \(inStartQueue), phase: \(phase))"
    }

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
    }

    /// What the core carries out after an event, in this order: stop the throttle timer,
    /// cancel the Swift task, publish `endedPending`, `endedRun`, take `next`, publish `waiting`.
    struct Effects {
        /// The pending generation was held by throttle and no longer is: stop its timer.
        var stopThrottleTimer = false
        /// The current run's Swift task was cancelled: cancel it and drop the handle.
        var cancelTask = false
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
    }

    /// The conditions a pending generation may start under.
    struct StartGate {
        var policy: RestartPolicy
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
        check(!isRemoved, "declare")
        counters.declared &+= 1
        guard changed else {
            counters.unchanged &+= 1
            return Effects()
        }
        var effects = Effects()
        generation &+= 1
        phase = .idle
        counters.liveGenerations &+= 1
        if pending != .none {
            effects.stopThrottleTimer = pending == .throttled
            pending = .none
            counters.coalesced &+= 1
            counters.liveGenerations &-= 1
            effects.endedPending = PhaseChange(generation: generation &- 1, phase: .cancelled(.supersededByPolicy))
        }
        if gate.policy != .keepRunning { cancelRun(reason: .identityChanged, into: &effects, counters: &counters) }
        if debounce > 0 {
            pending = .debouncing
            debounceDeadline = LoopInstant.nanoseconds(gate.now, plus: debounce)
            phase = .waiting
            effects.next = .waitForDebounce(deadline: debounceDeadline)
            effects.waiting = PhaseChange(generation: generation, phase: .waiting)
            return effects
        }
        pending = .startQueued  // provisional: the gate decides
        advancePending(gate, into: &effects)
        return effects
    }

    /// A debounce entry came due. Stale unless the generation still waits for that deadline.
    @inline(__always)
    mutating func debounceDue(deadline: UInt64, gate: StartGate) -> Effects {
        var effects = Effects()
        guard pending == .debouncing, debounceDeadline == deadline, !isRemoved else { return effects }
        advancePending(gate, into: &effects)
        return effects
    }

    /// The throttle timer fired. Stale unless a generation is held by throttle.
    @inline(__always)
    mutating func throttleDue(gate: StartGate) -> Effects {
        var effects = Effects()
        guard pending == .throttled, !isRemoved else { return effects }
        pending = .startQueued  // provisional: the gate decides (and re-arms if it still holds)
        advancePending(gate, into: &effects)
        return effects
    }

    /// The start pass reached this record. Returns the generation to start, or nil when the
    /// queued generation has since moved on (superseded into a debounce, or removed).
    @inline(__always)
    mutating func startAllowed(kind: RunKind, counters: inout RegistryCounters) -> UInt64? {
        check(inStartQueue, "startAllowed")
        inStartQueue = false
        guard pending == .startQueued, !isRemoved else { return nil }
        check(run == .none, "startAllowed")
        pending = .none
        counters.started &+= 1
        if hasStarted { counters.restarted &+= 1 }
        hasStarted = true
        runGeneration = generation
        counters.runningActions &+= 1
        switch kind {
        case .task: run = .task
        case .synchronousDelayed: run = .synchronousDelayed
        case .synchronousNow: run = .synchronousExecuting
        }
        phase = .running
        return generation
    }

    /// A delayed synchronous run's delay elapsed: whether to call its action now (false when
    /// the run was cancelled meanwhile, which ended it).
    mutating func synchronousRunDue(generation: UInt64) -> Bool {
        guard isCurrentRun(generation) else { return false }
        check(run == .synchronousDelayed, "synchronousRunDue")
        run = .synchronousExecuting
        return true
    }

    /// A run's action ended: its Swift task returned, or its synchronous action was called.
    /// The current run ends with `outcome`; a cancelled one only stops being counted. A
    /// generation waiting for it may then start.
    @inline(__always)
    mutating func runEnded(
        generation: UInt64, outcome: Outcome, isShutDown: Bool, gate: StartGate, counters: inout RegistryCounters
    ) -> Effects {
        var effects = Effects()
        counters.runningActions &-= 1
        if isCurrentRun(generation) {
            check(run != .synchronousDelayed, "runEnded")
            run = .none
            showsProgress = false
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
        if pending == .awaitingPrevious && !isRemoved { advancePending(gate, into: &effects) }
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
        if pending == .awaitingPrevious && !isRemoved { advancePending(gate, into: &effects) }
        return effects
    }

    /// The slot is gone (`reason` `.removed`), or the registry shuts down
    /// (`.registryShutDown`): the pending generation and the current run end cancelled, and
    /// only runs already cancelled are left to end.
    mutating func remove(reason: CancellationReason, counters: inout RegistryCounters) -> Effects {
        check(!isRemoved, "remove")
        isRemoved = true
        var effects = Effects()
        endPending(reason: reason, into: &effects, counters: &counters)
        cancelRun(reason: reason, into: &effects, counters: &counters)
        return effects
    }

    /// The caller cancels the task in place (`TaskRegistry.cancel`): as `remove`, but the task
    /// stays declared, and a later declaration starts it again.
    mutating func cancelByCaller(counters: inout RegistryCounters) -> Effects {
        check(!isRemoved, "cancelByCaller")
        var effects = Effects()
        endPending(reason: .cancelledByCaller, into: &effects, counters: &counters)
        cancelRun(reason: .cancelledByCaller, into: &effects, counters: &counters)
        return effects
    }

    /// The caller drops the generation that has not started (`TaskRegistry.dropPending`); a
    /// current run goes on.
    mutating func dropPending(counters: inout RegistryCounters) -> Effects {
        check(!isRemoved, "dropPending")
        var effects = Effects()
        endPending(reason: .pendingDropped, into: &effects, counters: &counters)
        return effects
    }

    /// The caller closes the debounce or throttle window early (`TaskRegistry.runNow`): the
    /// generation waiting in it goes to the start gate, without the throttle but still under
    /// the restart policy. Nothing happens when no generation waits in such a window.
    mutating func runNow(gate: StartGate) -> Effects {
        check(!isRemoved, "runNow")
        var effects = Effects()
        guard pending == .debouncing || pending == .throttled else { return effects }
        effects.stopThrottleTimer = pending == .throttled
        pending = .startQueued  // provisional: the gate decides
        var open = gate
        open.throttleReadyAt = 0
        advancePending(open, into: &effects)
        return effects
    }

    /// The current run's progress delay elapsed: whether to turn its progress signal on now.
    @inline(__always)
    mutating func progressDue(generation: UInt64) -> Bool {
        guard isCurrentRun(generation), !showsProgress else { return false }
        showsProgress = true
        return true
    }

    // MARK: - Steps shared by events

    /// Ends the pending generation, if any, cancelled for `reason`: it never runs.
    @inline(__always)
    private mutating func endPending(
        reason: CancellationReason, into effects: inout Effects, counters: inout RegistryCounters
    ) {
        guard pending != .none else { return }
        effects.stopThrottleTimer = pending == .throttled
        effects.dropPendingAction = true
        pending = .none
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        setPhase(.cancelled(reason), of: generation)
        effects.endedPending = PhaseChange(generation: generation, phase: .cancelled(reason))
    }

    @inline(__always)
    private mutating func cancelRun(
        reason: CancellationReason, into effects: inout Effects, counters: inout RegistryCounters
    ) {
        switch run {
        case .none:
            return
        case .task:
            endingRuns &+= 1
            effects.cancelTask = true
        case .synchronousExecuting:
            endingRuns &+= 1  // ends when its action returns
            effects.dropTask = true
        case .synchronousDelayed:
            counters.runningActions &-= 1  // its action is never called
            effects.dropTask = true
        }
        run = .none
        showsProgress = false
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        setPhase(.cancelled(reason), of: runGeneration)
        effects.endedRun = PhaseChange(generation: runGeneration, phase: .cancelled(reason))
    }

    /// Moves the pending generation through the gate: throttle, then the restart policy, then
    /// the start queue.
    @inline(__always)
    private mutating func advancePending(_ gate: StartGate, into effects: inout Effects) {
        if hasStarted && gate.throttleReadyAt > gate.now {
            if pending != .throttled {
                pending = .throttled
                effects.next = .waitForThrottle(until: gate.throttleReadyAt)
                publishWaitingOnce(into: &effects)
            }
            return
        }
        let mustWait: Bool
        switch gate.policy {
        case .cancelPrevious: mustWait = false
        case .awaitPrevious: mustWait = endingRuns > 0
        case .keepRunning: mustWait = run != .none || endingRuns > 0
        }
        if mustWait {
            pending = .awaitingPrevious
            effects.next = .waitForPrevious
            publishWaitingOnce(into: &effects)
            return
        }
        check(run == .none, "advancePending")
        pending = .startQueued
        // Until the pass, the phase reads `waiting`, unpublished: it lasts less than a turn.
        if phase == .idle { phase = .waiting }
        if !inStartQueue {
            inStartQueue = true
            effects.next = .queueStart
        }
    }

    @inline(__always)
    private mutating func publishWaitingOnce(into effects: inout Effects) {
        if phase == .waiting { return }
        phase = .waiting
        effects.waiting = PhaseChange(generation: generation, phase: .waiting)
    }

    /// A phase change is the task's phase only for the latest generation.
    @inline(__always)
    private mutating func setPhase(_ newPhase: Phase, of changed: UInt64) {
        if changed == generation { phase = newPhase }
    }

    /// Traps, printing the state, when an event arrives that the rules rule out.
    @inline(__always)
    private func check(_ condition: Bool, _ event: StaticString) {
        if !condition { impossible(event) }
    }

    @inline(never)
    private func impossible(_ event: StaticString) -> Never {
        fatalError("BUG DETECTED: event \(event) is impossible in \(self)")
    }

    // MARK: - Invariants

    /// The rules that hold between events (checked after each one by the internal-checks
    /// build, and by the state-machine tests). Returns the first one broken.
    func brokenInvariant() -> String? {
        if endingRuns < 0 { return "endingRuns < 0" }
        if isRemoved && (pending != .none || run != .none) { return "a removed task has a pending or current run" }
        if pending == .startQueued && run != .none { return "a queued generation with a current run" }
        if run != .none && runGeneration > generation { return "runGeneration > generation" }
        if run == .none && showsProgress { return "progress shown with no current run" }
        if pending == .startQueued && !inStartQueue { return "queued to start but not in the start queue" }
        if pending != .none && run != .none && runGeneration == generation {
            return "the current run's generation is also pending"
        }
        if pending != .none && generation == 0 { return "pending with no generation" }
        return nil
    }

    /// A state built field by field, for the state-machine tests.
    static func testState(
        generation: UInt64, runGeneration: UInt64, pending: Pending, run: Run, endingRuns: Int32 = 0,
        isRemoved: Bool = false, hasStarted: Bool = false, inStartQueue: Bool = false,
        debounceDeadline: UInt64 = 0, phase: Phase
    ) -> Self {
        var state = Self()
        state.generation = generation
        state.runGeneration = runGeneration
        state.pending = pending
        state.run = run
        state.endingRuns = endingRuns
        state.isRemoved = isRemoved
        state.hasStarted = hasStarted
        state.inStartQueue = inStartQueue
        state.debounceDeadline = debounceDeadline
        state.phase = phase
        return state
    }
}

/// The error of a `failed` phase read after its task left its slot, when the registry no
/// longer keeps the error (the registry's own lookups never do this).
struct UnrecordedFailure: Error {}
