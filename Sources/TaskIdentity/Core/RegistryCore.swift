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
    /// The way onto the loop thread for actions that run on other executors.
    let door: LoopDoor
    /// Every counter of task states moves inside `TaskStateMachine`'s transitions, which take
    /// them `inout` from each event's file; four count other things and move outside it:
    /// `liveSlots` (slots), `staleCommitsDropped` (commits), `identityEvaluations` and
    /// `observationCyclesStopped` (observed identity closures). Unchecked exclusivity: loop
    /// thread only, moved on every change: through `tally`, and `liveSlots` through `slotAdded`
    /// and `slotRemoved`.
    @exclusivity(unchecked) @usableFromInline private(set) var counters = RegistryCounters()
    /// Whether shutdown has begun, and who waits for it.
    @usableFromInline let shutdown = ShutdownState()
    /// The interned options and the loop timers they share.
    let optionsTable = OptionsTable()
    /// The queues of the concurrency limits in use.
    let limits: LimitQueues
    /// Shared runs that slots may still join.
    let sharedRuns = SharedRunTable()
    /// The registry that owns this core, for forgetting removed records (`adopt(owner:)`).
    /// Weak: a registry dropped without shutdown leaves running actions that still end here.
    private(set) weak var owner: AnyObject?
    /// The trace being recorded, if any (`TaskRegistry.startTrace`; set with `useTraceRecorder`).
    /// Unchecked exclusivity: loop thread only, read at every traced place and never held
    /// across a call (docs/safety.md).
    @exclusivity(unchecked) @usableFromInline private(set) var trace: TraceRecorder?
    /// What hears about runs (the spans of the runs, when a tracer records them): set at
    /// creation and never changed, so a declaring thread may read whether it is nil. The object
    /// itself is loop thread only.
    @usableFromInline let runHook: (any RunHook)?
    /// What an integration keeps for the core's life or while it runs (the metrics export
    /// `RegistryConfiguration.metrics` asked for, and its run timers), typed where it is
    /// used. Loop thread only.
    private(set) var integrations = Integrations()
    /// The owner's `PhaseStreams<Key>`, where records publish their phases: held here too, so
    /// that a registry released without shutdown still ends its streams the way shutdown does.
    let phaseStreams: AnyObject
    /// The start pass's state (`StartPass`), reached through `withStartPass`.
    /// @exclusivity(unchecked): loop thread only, touched on every change, and each access is
    /// one short call that reaches nothing else.
    @exclusivity(unchecked) private(set) var startPass = StartPass()
    /// What the contexts of runs still executing read from any thread: why a run was
    /// cancelled, its deadline (see `RunNotes`).
    let runNotes = RunNotes()
    /// Where what would otherwise be swallowed is reported (see `LibraryLog`).
    let log: LibraryLog
    /// Whether a generation was ever raised before it started (`escalate`): until then, starts
    /// do not look for a raise. Loop thread only.
    var startsMayBeRaised = false
    /// How runs' Swift tasks are named, or nil for unnamed runs (`RegistryConfiguration.namesRuns`).
    let runNaming: RunNaming?

    /// `log.debug`, for the registry's inlinable paths (out of line: they fail rarely).
    @usableFromInline @inline(never)
    func logDebug(_ message: String) { log.debug(message) }

    init(
        loop: any TaskLoop, configuration: RegistryConfiguration, phaseStreams: AnyObject, runHook: (any RunHook)?
    ) {
        self.log = configuration.log
        self.runNaming = RunNaming.of(configuration)
        self.limits = LimitQueues(defaultLimit: configuration.concurrencyLimit)
        self.runHook = runHook
        self.phaseStreams = phaseStreams
        self.loop = loop
        self.unretainedLoop = loop
        self.door = LoopDoor(loop: loop)
    }

    /// Moves the counters: `change` gets them `inout` (the state machine's events take them so).
    /// Loop thread only; `change` must not reach the core again.
    @inline(__always)
    func tally<Result>(_ change: (inout RegistryCounters) -> Result) -> Result { change(&counters) }

    /// A slot was added to the owner's table. Loop thread only.
    @usableFromInline
    func slotAdded() { counters.liveSlots &+= 1 }

    /// A slot was taken out of the owner's table. Loop thread only.
    @usableFromInline
    func slotRemoved() { counters.liveSlots &-= 1 }

    /// Calls `body` with the start pass's state `inout`. Loop thread only; `body` is one short
    /// call into `StartPass` that does not reach the core (a start that queues another never
    /// overlaps it).
    @inline(__always)
    func withStartPass<Result>(_ body: (inout StartPass) -> Result) -> Result { body(&startPass) }

    /// `registry` owns this core. Once, before the loop sees it.
    func adopt(owner registry: AnyObject) { owner = registry }

    /// Records trace events into `recorder` from now on (nil: none). Loop thread only, or
    /// before the loop sees the core.
    func useTraceRecorder(_ recorder: TraceRecorder?) { trace = recorder }

    /// Keeps the metrics export for the core's life.
    func keepMetricsExport(_ export: AnyObject?) { integrations.metricsExport = export }

    /// The run timers of a metrics export, while it runs (nil: none).
    func useRunTimers(_ timers: AnyObject?) { integrations.runTimers = timers }

    /// Whether shutdown has begun.
    @inlinable var isShutDown: Bool { shutdown.isShutDown }

    /// Whether some run may have rare state in its record to release at its end (see
    /// `OptionsTable.anyRare`).
    var mayHaveRareState: Bool { optionsTable.anyRare }

    // MARK: - Options

    /// The interned options object for `values`, creating its deadline queues on first use.
    @usableFromInline
    func options(for values: TaskOptions.Values, template: AnyObject? = nil) throws(LoopError) -> TaskOptions {
        try optionsTable.options(
            for: values, template: template, core: self, limitQueue: limits.queue(for:),
            defaultLimit: limits.defaultLimit)
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
@usableFromInline @inline(__always)
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
