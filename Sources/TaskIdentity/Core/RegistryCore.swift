import TaskLoopCore

/// The registry's engine, independent of the key type: options, deadline queues, and the life
/// of every run (schedule, start, cancel, end). `TaskRegistry` owns the slot table and calls in.
///
/// Loop thread only, without locks: every method runs on the registry's loop thread.
@usableFromInline
final class RegistryCore: @unchecked Sendable {
    // @unchecked Sendable: reached from tasks on other threads through its registry and
    // records, but every method runs on the loop thread (see docs/safety.md).
    //
    // @exclusivity(unchecked) below: loop-confined state read or written on every change, and
    // never accessed across a call that could reach the same property (docs/safety.md).
    @usableFromInline let loop: any TaskLoop
    /// `loop` without reference counting, for the calls made on every change (`now`,
    /// `inLoop`): copying the existential out of `loop` retains and releases it each time.
    /// Safe because `loop` keeps the loop alive as long as this core exists.
    @usableFromInline unowned(unsafe) let unretainedLoop: any TaskLoop
    let clock: LoopClock
    /// The way onto the loop thread for actions that run on other executors.
    let door: LoopDoor
    /// Every counter of task states moves inside `TaskStateMachine`'s transitions; four count
    /// other things and move outside it: `liveSlots` (slots), `staleCommitsDropped` (commits),
    /// `identityEvaluations` and `observationCyclesStopped` (observed identity closures).
    /// Unchecked exclusivity: loop thread only, moved on every change.
    @exclusivity(unchecked) @usableFromInline var counters = RegistryCounters()
    /// Read on every declaration and every run's end: unchecked like the counters.
    @exclusivity(unchecked) @usableFromInline var isShutDown = false
    var optionsTable: [TaskOptions.Values: TaskOptions] = [:]
    var debounceWindows: [UInt64: DebounceWindows] = [:]
    var progressQueues: [UInt64: DeadlineQueue<ProgressEntry>] = [:]
    var synchronousQueues: [UInt64: DeadlineQueue<SynchronousRunEntry>] = [:]
    var timeLimitLists: [UInt64: TimeLimits] = [:]
    /// Some options made so far use rare options (a time limit, a concurrency limit, retries,
    /// refreshes, shared runs), so that a run's end may have rare state to release in its
    /// record (`RareTaskState`); never reset: a registry that once used them pays one more
    /// load per end. Unchecked exclusivity: loop thread only, read on every run's end.
    @exclusivity(unchecked) var hasRunSideTables = false
    /// Shared runs that slots may still join, by their action and identity. Loop thread only.
    var sharedRuns: [SharedRunKey: SharedRun] = [:]
    /// The random numbers of retries' jitter.
    var retryRandom = SystemRandomNumberGenerator()
    /// The registry's concurrency limit for tasks declared without one
    /// (`RegistryConfiguration.concurrencyLimit`).
    let defaultLimit: ConcurrencyLimit?
    /// This registry's queue of each concurrency limit in use, by the limit's number.
    var limitQueues: [UInt32: LimitQueue] = [:]
    /// Queues with a free place and waiters, admitted from at the end of the start pass.
    /// Unchecked exclusivity: loop thread only, read by every start pass.
    @exclusivity(unchecked) var admissionsDue: [LimitQueue] = []
    /// The tasks' own timers (throttle, retry, refresh: in their records' `RareTaskState`)
    /// that are open, for `openTimerCount`. Loop thread only.
    var openTaskTimers = 0
    /// The registry that owns this core, for forgetting removed records. Weak: a registry
    /// dropped without shutdown leaves running actions that still end here.
    weak var owner: AnyObject?
    /// The trace being recorded, if any (`TaskRegistry.startTrace`). Unchecked exclusivity:
    /// loop thread only, read at every traced place and never held across a call
    /// (docs/safety.md).
    @exclusivity(unchecked) @usableFromInline var trace: TraceRecorder?
    /// What hears about runs (the spans of the runs, when a tracer records them): set at
    /// creation and never changed, so a declaring thread may read whether it is nil. The object
    /// itself is loop thread only.
    @usableFromInline let runHook: (any RunHook)?
    /// What an integration keeps for the core's life or while it runs (the metrics export
    /// `RegistryConfiguration.metrics` asked for, and its run timers), typed where it is
    /// used. Loop thread only.
    var integrations = Integrations()
    /// The owner's `PhaseStreams<Key>`, where records publish their phases: held here too, so
    /// that a registry released without shutdown still ends its streams the way shutdown does.
    let phaseStreams: AnyObject
    var quiescedWaiters: [() -> Void] = []
    /// Runs of this registry that await `shutdown()` (in their action or a child task of it):
    /// shutdown returns once every other action has ended. A run awaiting it from several
    /// child tasks counts once. A list, not a table: it holds the few runs that call
    /// `shutdown()`, and only while it waits.
    // @exclusivity(unchecked), as the counters: loop thread only.
    @exclusivity(unchecked) var runsAwaitingShutdown: [RunKey] = []
    /// The start pass's state (`StartPass`). @exclusivity(unchecked): loop thread only, touched
    /// on every change, and each access is one short call that reaches nothing else.
    @exclusivity(unchecked) var startPass = StartPass()

    /// Where what would otherwise be swallowed is reported (see `LibraryLog`).
    let log: LibraryLog

    /// `log.debug`, for the registry's inlinable paths (out of line: they fail rarely).
    @usableFromInline @inline(never)
    func logDebug(_ message: String) { log.debug(message) }

    init(
        loop: any TaskLoop, configuration: RegistryConfiguration, phaseStreams: AnyObject, runHook: (any RunHook)?
    ) {
        self.log = configuration.log
        self.defaultLimit = configuration.concurrencyLimit
        self.runHook = runHook
        self.phaseStreams = phaseStreams
        self.loop = loop
        self.unretainedLoop = loop
        self.clock = loop.clock
        self.door = LoopDoor(loop: loop)
    }

    // MARK: - Options

    /// The interned options object for `values`, creating its deadline queues on first use.
    @usableFromInline
    func options(for values: TaskOptions.Values, template: AnyObject? = nil) throws(LoopError) -> TaskOptions {
        if let options = optionsTable[values] { return options }
        var windows: DebounceWindows?
        let debounce = UInt64(values.debounce.clampedNanoseconds)
        if debounce > 0 {
            windows = try deadlineList(in: &debounceWindows, delay: debounce) { [unowned self] in self.debounceDue($0) }
        }
        var progressQueue: DeadlineQueue<ProgressEntry>?
        if let delay = values.progressDelay.map({ UInt64($0.clampedNanoseconds) }) {
            progressQueue = try deadlineList(in: &progressQueues, delay: delay) {
                [unowned self] in self.progressDue($0)
            }
        }
        var synchronousQueue: DeadlineQueue<SynchronousRunEntry>?
        let synchronousDelay = UInt64(values.synchronousDelay.clampedNanoseconds)
        if synchronousDelay > 0 {
            synchronousQueue = try deadlineList(in: &synchronousQueues, delay: synchronousDelay) {
                [unowned self] in self.synchronousRunDue($0)
            }
        }
        var timeLimits: TimeLimits?
        // A synchronous run's action, called after its delay, ends the run before a limit at
        // least that long could pass: such a limit needs no list and no timer.
        if let limit = values.timeout.map({ UInt64($0.clampedNanoseconds) }),
            synchronousDelay == 0 || limit < synchronousDelay
        {
            timeLimits = try deadlineList(in: &timeLimitLists, delay: limit) { [unowned self] in
                self.timeLimitPassed($0)
            }
        }
        let limit = ConcurrencyLimit(bits: values.limitBits) ?? defaultLimit
        if timeLimits != nil || limit != nil || values.rareNumber != 0 || values.sharesRuns { hasRunSideTables = true }
        let options = TaskOptions(
            values: values, debounceWindows: windows, progressQueue: progressQueue,
            synchronousQueue: synchronousQueue, timeLimits: timeLimits,
            limitQueue: limit.map { limitQueue(for: $0) }, template: template)
        optionsTable[values] = options
        return options
    }

    /// The registry's list of `delay` in `table`, made (with its loop timer) on first use.
    func deadlineList<List: DeadlineList>(
        in table: inout [UInt64: List], delay: UInt64, onDue: @escaping (List.Due) -> Void
    ) throws(LoopError) -> List {
        if let list = table[delay] { return list }
        let list = List(delayNanoseconds: delay)
        try list.attach(to: loop, onDue: onDue)
        table[delay] = list
        return list
    }
}

/// What integrations keep in the core (see `RegistryCore.integrations`), as plain objects: the
/// core names no trait. Loop thread only.
struct Integrations {
    /// The metrics export `RegistryConfiguration.metrics` asked for (`RegistryMetricsExport`).
    var metricsExport: AnyObject?
    /// The run timers of a metrics export that asked for them, while it runs (`RunTimers`).
    var runTimers: AnyObject?
}

/// The identity of a task that `cancel` or `dropPending` made forget its own: a value of a
/// type of its own, equal to no declared identity (nor to the absence of one), so that the
/// next declaration always starts a new generation.
struct ForgottenIdentity: Hashable, Sendable {}

/// Compares two identities of unknown types: equal when of the same type and `==`.
@inline(__always)
func identitiesEqual(_ lhs: any Hashable & Sendable, _ rhs: any Hashable & Sendable) -> Bool {
    isEqual(lhs, rhs)
}

private func isEqual<Left: Hashable>(_ lhs: Left, _ rhs: any Hashable & Sendable) -> Bool {
    // Opening both sides and comparing metatypes is a pointer compare; `rhs as? Left` would go
    // through the dynamic-cast machinery (profiled at a tenth of a debounced change).
    func compare<Right: Hashable>(_ rhs: Right) -> Bool {
        guard Left.self == Right.self else { return false }
        return lhs == unsafeBitCast(rhs, to: Left.self)  // bit cast to its own type: checked just above
    }
    return compare(rhs)
}

/// One run of one task record, as a set element.
struct RunKey: Hashable {
    let record: ObjectIdentifier
    let generation: UInt64

    init(record: AnyTaskRecord, generation: UInt64) {
        self.record = ObjectIdentifier(record)
        self.generation = generation
    }
}
