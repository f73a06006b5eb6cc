import UVLoop

/// The action of a task: one Swift task per run, on the registry's loop or on the executor
/// chosen for the task (`ActionExecutor`).
///
/// `nonisolated(nonsending)`: the action runs on the executor its run's task is on, so calling
/// it is a plain call, with no executor check and switch on entry. A closure isolated to an
/// actor (`{ @MainActor context in … }`) still runs on that actor, whatever `executor:` says;
/// it lands its results with `TaskContext.commitOnLoop`, since `commit` is loop-thread only.
public typealias TaskAction = nonisolated(nonsending) @Sendable (TaskContext) async throws -> Void

/// The action of a synchronous task (`TaskTemplate.synchronous`): called on the registry's loop
/// thread, inline, with no Swift task.
public typealias SynchronousTaskAction = @Sendable (TaskContext) throws -> Void

/// What a run executes: a Swift task, or a synchronous call on the loop thread.
@usableFromInline
enum RunBody: Sendable {
    case task(TaskAction)
    case synchronous(SynchronousTaskAction)
}

/// Declaration options, interned per registry so that a record holds one reference to them,
/// and so that the debounce and progress queues are looked up once per distinct options, not
/// once per change.
@usableFromInline
final class TaskOptions: @unchecked Sendable {
    /// The options as declared. Durations stay `Duration`s here, so that comparing a
    /// declaration's options with a record's costs no conversion; nanoseconds are computed
    /// once, when the options are interned.
    @usableFromInline
    struct Values: Hashable, Sendable {
        @usableFromInline var priority: UInt8
        @usableFromInline var policy: RestartPolicy
        @usableFromInline var debounce: Duration
        @usableFromInline var throttle: Duration
        @usableFromInline var progressDelay: Duration?
        /// How long a synchronous run stays `running` before its action is called; zero for
        /// one called when it starts, and for Swift-task actions.
        @usableFromInline var synchronousDelay: Duration
        /// Where a Swift-task action runs (see `ActionExecutor`).
        @usableFromInline var executor: ActionExecutor

        /// - Throws: `RegistryError.invalidDuration` for a negative duration.
        @inlinable
        init(
            priority: TaskPriority, policy: RestartPolicy, debounce: Duration, throttle: Duration,
            progressDelay: Duration?, synchronousDelay: Duration = .zero, executor: ActionExecutor = .loop
        ) throws(RegistryError) {
            if debounce < .zero { throw RegistryError.invalidDuration(name: "debounce", debounce) }
            if throttle < .zero { throw RegistryError.invalidDuration(name: "throttle", throttle) }
            if let progressDelay, progressDelay < .zero {
                throw RegistryError.invalidDuration(name: "progressDelay", progressDelay)
            }
            if synchronousDelay < .zero { throw RegistryError.invalidDuration(name: "after", synchronousDelay) }
            self.priority = priority.rawValue
            self.policy = policy
            self.debounce = debounce
            self.throttle = throttle
            self.progressDelay = progressDelay
            self.synchronousDelay = synchronousDelay
            self.executor = executor
        }
    }

    @usableFromInline let values: Values
    /// `values` in nanoseconds.
    let debounceNanoseconds: UInt64
    let throttleNanoseconds: UInt64
    let progressDelayNanoseconds: UInt64?
    let priority: TaskPriority
    /// The debounce queue for `values.debounce`, if it is not zero.
    let debounceQueue: DeadlineQueue<DebounceEntry>?
    /// The progress queue for `values.progressDelay`, if any.
    let progressQueue: DeadlineQueue<ProgressEntry>?
    /// The queue of synchronous runs waiting out `values.synchronousDelay`, if it is not zero.
    let synchronousQueue: DeadlineQueue<SynchronousRunEntry>?

    init(
        values: Values, debounceQueue: DeadlineQueue<DebounceEntry>?, progressQueue: DeadlineQueue<ProgressEntry>?,
        synchronousQueue: DeadlineQueue<SynchronousRunEntry>?
    ) {
        self.values = values
        self.debounceNanoseconds = UInt64(values.debounce.clampedNanoseconds)
        self.throttleNanoseconds = UInt64(values.throttle.clampedNanoseconds)
        self.progressDelayNanoseconds = values.progressDelay.map { UInt64($0.clampedNanoseconds) }
        self.priority = TaskPriority(rawValue: values.priority)
        self.debounceQueue = debounceQueue
        self.progressQueue = progressQueue
        self.synchronousQueue = synchronousQueue
    }
}

/// A debounce window's entry: valid only while the record still waits for that deadline.
struct DebounceEntry: DeadlineEntry {
    let record: AnyTaskRecord
    let deadline: UInt64
}

/// A progress delay's entry: valid only while that generation is still the running one.
struct ProgressEntry: DeadlineEntry {
    let record: AnyTaskRecord
    let generation: UInt64
    let deadline: UInt64
}

/// A synchronous run waiting out its delay: valid only while that generation is still the
/// running one (a cancelled run is skipped when its entry comes due).
struct SynchronousRunEntry: DeadlineEntry {
    let record: AnyTaskRecord
    let generation: UInt64
    let deadline: UInt64
    let action: SynchronousTaskAction
    /// The run's identity: the record's may have moved on meanwhile (`keepRunning`).
    let identity: (any Hashable & Sendable)?
}

/// One task of one slot: its identity, its generations, its pending and running runs.
///
/// Its stored properties skip dynamic exclusivity checks (`@exclusivity(unchecked)`): they are
/// touched only on the loop thread, by code that never holds an access across a call, and the
/// checks were about a tenth of a debounced change's cost (as for the slot table, the deadline
/// queues and the loop's own queues, marked the same way).
///
/// Loop thread only. Records are referenced by the slot table, by their running Swift tasks
/// and by deadline-queue entries, so a removed record lives until none of them needs it.
@usableFromInline
class AnyTaskRecord: RunOwner, @unchecked Sendable {
    // Field order is cache order: a run that comes due (a deadline entry, then `commit`)
    // reads the first fields only, which share the object header's cache line with the
    // reference count that the entry's release touches anyway. With many slots, records are
    // cold in the cache, and each further line is a miss.
    @exclusivity(unchecked) var runGeneration: UInt64 = 0
    @exclusivity(unchecked) var generation: UInt64 = 0
    unowned(unsafe) let core: RegistryCore
    /// The latest result a current run stored (`TaskContext.commit(result:)`), boxed so that
    /// tasks that never store one pay a pointer, not an existential.
    @exclusivity(unchecked) var result: ResultBox?
    @exclusivity(unchecked) var phase: TaskPhase = .idle
    /// The record's yes/no state, one bit each (ten `Bool`s took the record over a malloc
    /// size class: 16 more bytes per slot).
    @exclusivity(unchecked) @usableFromInline var flags = RecordFlags()
    /// Cancelled runs whose Swift tasks have not ended yet.
    @exclusivity(unchecked) var endingRuns: Int32 = 0
    @usableFromInline let name: TaskName
    @exclusivity(unchecked) @usableFromInline var options: TaskOptions
    /// The action of the latest generation while it has not started.
    @exclusivity(unchecked) var pendingAction: RunBody?
    @exclusivity(unchecked) @usableFromInline var nextInSlot: AnyTaskRecord?
    /// The current run's task, while it is current.
    @exclusivity(unchecked) var runningTask: Task<Void, Never>?

    @exclusivity(unchecked) var identity: (any Hashable & Sendable)?
    @exclusivity(unchecked) var debounceDeadline: UInt64 = 0

    var runIsCurrent: Bool {
        get { flags.contains(.runIsCurrent) }
        set { flags.set(.runIsCurrent, newValue) }
    }
    /// The current or last run is synchronous: it has no Swift task, and cancelling it ends it.
    var runIsSynchronous: Bool {
        get { flags.contains(.runIsSynchronous) }
        set { flags.set(.runIsSynchronous, newValue) }
    }
    var removed: Bool {
        get { flags.contains(.removed) }
        set { flags.set(.removed, newValue) }
    }
    @usableFromInline var hasObservers: Bool {
        @inlinable get { flags.contains(.hasObservers) }
        @inlinable set { flags.set(.hasObservers, newValue) }
    }
    var showsProgress: Bool {
        get { flags.contains(.showsProgress) }
        set { flags.set(.showsProgress, newValue) }
    }
    var waitingForPrevious: Bool {
        get { flags.contains(.waitingForPrevious) }
        set { flags.set(.waitingForPrevious, newValue) }
    }
    /// Queued to start at the end of this loop turn.
    var startScheduled: Bool {
        get { flags.contains(.startScheduled) }
        set { flags.set(.startScheduled, newValue) }
    }
    var waitingForDebounce: Bool {
        get { flags.contains(.waitingForDebounce) }
        set { flags.set(.waitingForDebounce, newValue) }
    }
    var waitingForThrottle: Bool {
        get { flags.contains(.waitingForThrottle) }
        set { flags.set(.waitingForThrottle, newValue) }
    }
    var hasRun: Bool {
        get { flags.contains(.hasRun) }
        set { flags.set(.hasRun, newValue) }
    }
    /// A synchronous run's action is executing now: cancelling the run (from inside that
    /// action) must not count it ended before the action returns.
    var actionExecuting: Bool {
        get { flags.contains(.actionExecuting) }
        set { flags.set(.actionExecuting, newValue) }
    }

    @usableFromInline
    init(name: TaskName, core: RegistryCore, options: TaskOptions) {
        self.name = name
        self.core = core
        self.options = options
    }

    @usableFromInline func preconditionInLoop() { core.unretainedLoop.preconditionInLoop() }

    @usableFromInline var loop: any TaskLoop { core.loop }

    @usableFromInline var door: LoopDoor { core.door }

    @usableFromInline func storeResult(_ result: any Sendable) {
        if let box = self.result {
            box.value = result
        } else {
            self.result = ResultBox(result)
        }
    }

    @usableFromInline func isCurrentRun(_ generation: UInt64) -> Bool {
        runIsCurrent && runGeneration == generation && !removed
    }

    @usableFromInline func noteStaleCommit() { core.counters.staleCommitsDropped &+= 1 }

    /// Sends a phase update to observers; overridden by the keyed record that knows its key.
    func publish(generation: UInt64, phase: TaskPhase) {}
}

/// A record that knows its slot's key, for observers.
@usableFromInline
final class TaskRecord<Key: Hashable & Sendable>: AnyTaskRecord, @unchecked Sendable {
    @usableFromInline let key: Key

    @usableFromInline
    init(key: Key, name: TaskName, registry: TaskRegistry<Key>, options: TaskOptions) {
        self.key = key
        super.init(name: name, core: registry.core, options: options)
    }

    override func publish(generation: UInt64, phase: TaskPhase) {
        // The core's owner is this record's registry; reaching it through the core keeps a
        // pointer out of every record.
        guard let owner = core.owner else { return }  // the registry is gone; nobody observes
        unsafeDowncast(owner, to: TaskRegistry<Key>.self).publish(self, generation: generation, phase: phase)
    }
}

/// A record's yes/no state as bits.
@usableFromInline
struct RecordFlags: OptionSet, Sendable {
    @usableFromInline var rawValue: UInt16
    @inlinable init(rawValue: UInt16) { self.rawValue = rawValue }

    static let runIsCurrent = RecordFlags(rawValue: 1 << 0)
    static let runIsSynchronous = RecordFlags(rawValue: 1 << 1)
    static let removed = RecordFlags(rawValue: 1 << 2)
    @usableFromInline static let hasObservers = RecordFlags(rawValue: 1 << 3)
    static let showsProgress = RecordFlags(rawValue: 1 << 4)
    static let waitingForPrevious = RecordFlags(rawValue: 1 << 5)
    static let startScheduled = RecordFlags(rawValue: 1 << 6)
    static let waitingForDebounce = RecordFlags(rawValue: 1 << 7)
    static let waitingForThrottle = RecordFlags(rawValue: 1 << 8)
    static let hasRun = RecordFlags(rawValue: 1 << 9)
    static let actionExecuting = RecordFlags(rawValue: 1 << 10)

    @inlinable
    mutating func set(_ flag: RecordFlags, _ on: Bool) {
        if on { formUnion(flag) } else { subtract(flag) }
    }
}

/// A task's latest stored result. Loop thread only.
final class ResultBox {
    var value: any Sendable
    init(_ value: any Sendable) { self.value = value }
}

/// Throttle bookkeeping, allocated only for throttled tasks.
final class ThrottleState {
    var lastStart: UInt64 = 0
    var timer: (any LoopTimer)?
}
