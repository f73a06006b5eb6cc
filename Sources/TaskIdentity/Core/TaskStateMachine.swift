import TaskLoopCore

/// The life of one task of one slot, as a pure state machine: one `mutating func` per event,
/// each returning what the registry's core must do. The core owns the side effects (Swift
/// tasks, deadline queues, throttle timers, phase streams); this type owns the rules, the
/// phase, and every counter move, so that the counter invariant holds by construction.
///
/// Where the task stands is one enum, `Stage` (see docs/state-machine.md for the diagram),
/// whose cases hold what exists in them: the current run (its kind and progress signal), the
/// generation waiting to start (a debounce window's deadline), both at once only where the
/// rules allow it (a `keepRunning` run beside a held generation), and nothing once removed. A
/// removed task with a current run, a generation queued to start beside a run, or a deadline
/// without a debounce window cannot be built. Beside the stage are the task's history
/// (`generation`, `runGeneration`, `hasStarted`), its phase, the cancelled runs still ending
/// (`endingRuns`, which a removed task keeps), and whether the record sits in the core's start
/// queue (which it leaves only at the pass, whatever the stage meanwhile). An event that
/// cannot happen in the current stage is a bug in the registry: it traps and prints the state.
///
/// The stage holds plain values only: the run's Swift task and the pending action stay in the
/// record, so that moving the machine from stage to stage never retains, releases or copies
/// out of line (a stage holding them cost W1 about 900 instructions per change; the
/// internal-checks build checks that the record's pending action exists exactly while a
/// generation is pending).
///
/// Loop thread only (a value inside a loop-confined record).
@usableFromInline
struct TaskStateMachine: Sendable, CustomStringConvertible {
    /// Where the task stands.
    @usableFromInline
    enum Stage: Equatable, Sendable {
        /// No current run and nothing pending: never declared, or its latest generation ended.
        case quiet
        /// The latest generation waits to start, with no current run.
        case waiting(Waiting)
        /// A current run, and nothing pending.
        case running(ActiveRun)
        /// The latest generation, held, beside a current run that `keepRunning` keeps (it can
        /// be queued to start only once the run has ended). The held generation comes first:
        /// its deadline then leads the payload, and the machine packs into 34 bytes, where the
        /// other order takes 42 and moves the record to a larger malloc size class (about a
        /// hundred instructions per change in malloc, on W1).
        case heldBesideRun(Held, ActiveRun)
        /// Out of its slot: only runs already cancelled are left to end (`endingRuns`).
        case removed
    }

    /// Why a generation that has not started waits, where it may wait beside a current run.
    @usableFromInline
    enum Held: Equatable, Sendable {
        /// Waiting out its debounce window, which closes at `deadline` (loop nanoseconds).
        case debouncing(deadline: UInt64)
        /// Held until the throttle window since the last start closes.
        case throttled
        /// Waiting for a previous run to end (`awaitPrevious`, `keepRunning`).
        case awaitingPrevious

        /// A pattern, not `==`: the synthesized `==` of an enum with payloads is a call.
        var isThrottled: Bool {
            if case .throttled = self { return true }
            return false
        }
    }

    /// Why a generation that has not started waits, with no current run.
    @usableFromInline
    enum Waiting: Equatable, Sendable {
        case held(Held)
        /// Starts in this turn's start pass.
        case startQueued

        /// A pattern, not `==`: the synthesized `==` of an enum with payloads is a call.
        var isThrottled: Bool {
            if case .held(.throttled) = self { return true }
            return false
        }
    }

    /// The current run: the one whose results may still land.
    @usableFromInline
    struct ActiveRun: Equatable, Sendable {
        @usableFromInline var kind: ActiveKind
        /// Its delayed progress signal is on.
        @usableFromInline var showsProgress = false
    }

    /// What the current run is.
    @usableFromInline
    enum ActiveKind: UInt8, Sendable {
        /// A Swift task.
        case task
        /// A synchronous run waiting out its delay; its action has not been called.
        case synchronousDelayed
        /// A synchronous run whose action is executing now, on the loop thread.
        case synchronousExecuting
    }

    /// The pending part of the stage, as one value (for the core's guards, and the tests).
    @usableFromInline
    enum Pending: UInt8, Sendable {
        /// No generation waits: the latest one is running, has ended, or none was declared.
        case none
        case debouncing
        case throttled
        case awaitingPrevious
        case startQueued
    }

    /// The current-run part of the stage, as one value (for the core's guards, and the tests).
    @usableFromInline
    enum Run: UInt8, Sendable {
        case none
        case task
        case synchronousDelayed
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
    // `stage`, which then share the record's first cache line with its header.
    /// The generation of the current run (or the last one started).
    private(set) var runGeneration: UInt64 = 0
    /// How many identities the task has had in its slot's lifetime.
    private(set) var generation: UInt64 = 0
    /// Where the task stands.
    private(set) var stage = Stage.quiet
    /// The phase of the latest generation.
    private(set) var phase: Phase = .idle
    /// Cancelled runs (Swift tasks, or a synchronous action cancelled from inside) that have
    /// not ended yet.
    private(set) var endingRuns: Int32 = 0
    /// A run has started in this slot's lifetime (throttle and `restarted` count from it).
    private(set) var hasStarted = false
    /// The record is in the core's start queue (possibly no longer `startQueued`).
    private(set) var inStartQueue = false

    init() {}

    /// Whether `generation` is the current run's.
    @inline(__always)
    func isCurrentRun(_ generation: UInt64) -> Bool {
        switch stage {
        case .running, .heldBesideRun: return runGeneration == generation
        case .quiet, .waiting, .removed: return false
        }
    }

    /// The pending part of the stage.
    var pending: Pending {
        switch stage {
        case .quiet, .running, .removed: return .none
        case .waiting(.startQueued): return .startQueued
        case .waiting(.held(let held)), .heldBesideRun(let held, _):
            switch held {
            case .debouncing: return .debouncing
            case .throttled: return .throttled
            case .awaitingPrevious: return .awaitingPrevious
            }
        }
    }

    /// The current-run part of the stage.
    var run: Run {
        switch stage {
        case .quiet, .waiting, .removed: return .none
        case .running(let run), .heldBesideRun(_, let run):
            switch run.kind {
            case .task: return .task
            case .synchronousDelayed: return .synchronousDelayed
            case .synchronousExecuting: return .synchronousExecuting
            }
        }
    }

    /// The task has left its slot.
    var isRemoved: Bool {
        if case .removed = stage { return true }
        return false
    }

    /// The delayed progress signal of the current run is on.
    var showsProgress: Bool {
        switch stage {
        case .running(let run), .heldBesideRun(_, let run): return run.showsProgress
        case .quiet, .waiting, .removed: return false
        }
    }

    /// The deadline of the debounce window being waited out; 0 when none is.
    var debounceDeadline: UInt64 {
        switch stage {
        case .waiting(.held(.debouncing(let deadline))), .heldBesideRun(.debouncing(let deadline), _):
            return deadline
        default: return 0
        }
    }

    @usableFromInline var description: String {
        "TaskStateMachine(generation: \(generation), runGeneration: \(runGeneration), stage: \(stage), "
            + "endingRuns: \(endingRuns), hasStarted: \(hasStarted), inStartQueue: \(inStartQueue), "
            + "phase: \(phase))"
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
            supersedePending(wasThrottled: waiting.isThrottled, into: &effects, counters: &counters)
            run = nil
        case .heldBesideRun(let held, let current):
            supersedePending(wasThrottled: held.isThrottled, into: &effects, counters: &counters)
            run = current
        }
        if gate.policy != .keepRunning, let current = run {
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
    mutating func startAllowed(kind: RunKind, counters: inout RegistryCounters) -> UInt64? {
        check(inStartQueue, "startAllowed")
        inStartQueue = false
        guard case .waiting(.startQueued) = stage else { return nil }
        counters.started &+= 1
        if hasStarted { counters.restarted &+= 1 }
        hasStarted = true
        runGeneration = generation
        counters.runningActions &+= 1
        switch kind {
        case .task: stage = .running(ActiveRun(kind: .task))
        case .synchronousDelayed: stage = .running(ActiveRun(kind: .synchronousDelayed))
        case .synchronousNow: stage = .running(ActiveRun(kind: .synchronousExecuting))
        }
        phase = .running
        return generation
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
    @inline(__always)
    mutating func runEnded(
        generation: UInt64, outcome: Outcome, isShutDown: Bool, gate: StartGate, counters: inout RegistryCounters
    ) -> Effects {
        var effects = Effects()
        counters.runningActions &-= 1
        var run: ActiveRun?
        var held: Held?
        switch stage {
        case .running(let current): run = current
        case .heldBesideRun(let waiting, let current): (run, held) = (current, waiting)
        case .waiting(.held(let waiting)): held = waiting
        case .quiet, .waiting(.startQueued), .removed: break
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
    mutating func dropPending(counters: inout RegistryCounters) -> Effects {
        var effects = Effects()
        switch stage {
        case .removed:
            impossible("dropPending")
        case .quiet, .running:
            break
        case .waiting(let waiting):
            endPending(wasThrottled: waiting.isThrottled, reason: .pendingDropped, into: &effects, counters: &counters)
            stage = .quiet
        case .heldBesideRun(let held, let run):
            endPending(wasThrottled: held.isThrottled, reason: .pendingDropped, into: &effects, counters: &counters)
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

    // MARK: - Steps shared by events

    /// A pending generation ends superseded by a newer declaration: it never runs.
    @inline(__always)
    private mutating func supersedePending(
        wasThrottled: Bool, into effects: inout Effects, counters: inout RegistryCounters
    ) {
        effects.stopThrottleTimer = wasThrottled
        counters.coalesced &+= 1
        counters.liveGenerations &-= 1
        effects.endedPending = PhaseChange(generation: generation &- 1, phase: .cancelled(.supersededByPolicy))
    }

    /// Ends the pending generation cancelled for `reason`: it never runs. The caller sets the
    /// stage.
    @inline(__always)
    private mutating func endPending(
        wasThrottled: Bool, reason: CancellationReason, into effects: inout Effects,
        counters: inout RegistryCounters
    ) {
        effects.stopThrottleTimer = wasThrottled
        effects.dropPendingAction = true
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        setPhase(.cancelled(reason), of: generation)
        effects.endedPending = PhaseChange(generation: generation, phase: .cancelled(reason))
    }

    /// Ends the pending generation and cancels the current run, whichever exist, for
    /// `reason`. The caller sets the stage.
    private mutating func endPendingAndRun(
        reason: CancellationReason, event: StaticString, into effects: inout Effects,
        counters: inout RegistryCounters
    ) {
        switch stage {
        case .removed:
            impossible(event)
        case .quiet:
            break
        case .waiting(let waiting):
            endPending(wasThrottled: waiting.isThrottled, reason: reason, into: &effects, counters: &counters)
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
    private mutating func cancelRun(
        _ run: ActiveRun, reason: CancellationReason, into effects: inout Effects, counters: inout RegistryCounters
    ) {
        switch run.kind {
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
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        setPhase(.cancelled(reason), of: runGeneration)
        effects.endedRun = PhaseChange(generation: runGeneration, phase: .cancelled(reason))
    }

    /// The stage with the latest generation held for `held`, beside `run` if there is one.
    @inline(__always)
    private mutating func hold(_ held: Held, beside run: ActiveRun?) {
        if let run { stage = .heldBesideRun(held, run) } else { stage = .waiting(.held(held)) }
    }

    /// Moves the latest generation, pending beside `run` (the current run, if any), through
    /// the gate: throttle, then the restart policy, then the start queue.
    @inline(__always)
    private mutating func advancePending(beside run: ActiveRun?, _ gate: StartGate, into effects: inout Effects) {
        if hasStarted && gate.throttleReadyAt > gate.now {
            hold(.throttled, beside: run)
            effects.next = .waitForThrottle(until: gate.throttleReadyAt)
            publishWaitingOnce(into: &effects)
            return
        }
        let mustWait: Bool
        switch gate.policy {
        case .cancelPrevious: mustWait = false
        case .awaitPrevious: mustWait = endingRuns > 0
        case .keepRunning: mustWait = run != nil || endingRuns > 0
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

    /// A state built from its parts, for the state-machine tests; traps on a combination no
    /// stage holds.
    static func testState(
        generation: UInt64, runGeneration: UInt64, pending: Pending, run: Run, endingRuns: Int32 = 0,
        isRemoved: Bool = false, hasStarted: Bool = false, inStartQueue: Bool = false,
        debounceDeadline: UInt64 = 0, phase: Phase
    ) -> Self {
        var state = Self()
        state.generation = generation
        state.runGeneration = runGeneration
        state.endingRuns = endingRuns
        state.hasStarted = hasStarted
        state.inStartQueue = inStartQueue
        state.phase = phase
        let held: Held? =
            switch pending {
            case .none, .startQueued: nil
            case .debouncing: .debouncing(deadline: debounceDeadline)
            case .throttled: .throttled
            case .awaitingPrevious: .awaitingPrevious
            }
        let active: ActiveRun? =
            switch run {
            case .none: nil
            case .task: ActiveRun(kind: .task)
            case .synchronousDelayed: ActiveRun(kind: .synchronousDelayed)
            case .synchronousExecuting: ActiveRun(kind: .synchronousExecuting)
            }
        switch (isRemoved, active, held, pending) {
        case (true, nil, nil, .none): state.stage = .removed
        case (false, nil, nil, .none): state.stage = .quiet
        case (false, nil, nil, .startQueued): state.stage = .waiting(.startQueued)
        case (false, nil, let held?, _): state.stage = .waiting(.held(held))
        case (false, let active?, nil, .none): state.stage = .running(active)
        case (false, let active?, let held?, _): state.stage = .heldBesideRun(held, active)
        default: preconditionFailure("no stage holds \(pending) with \(run), removed: \(isRemoved)")
        }
        return state
    }
}

/// The error of a `failed` phase read after its task left its slot, when the registry no
/// longer keeps the error (the registry's own lookups never do this).
struct UnrecordedFailure: Error {}
