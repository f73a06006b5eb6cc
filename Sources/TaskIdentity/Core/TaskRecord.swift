import Synchronization
import TaskLoopCore

/// One task of one slot: its state machine, its pending action and its running task.
///
/// Loop thread only. Records are referenced by the slot table, by their running Swift tasks,
/// by deadline-queue entries and by the `TaskContext`s of their runs, so a removed record lives
/// until none of them needs it; it holds its core strongly, so a context that outlives the
/// registry still finds the core (where every run is over by then).
@usableFromInline
class AnyTaskRecord: @unchecked Sendable {
    // @unchecked Sendable: a record is handed to Swift tasks and contexts on other threads, but
    // its mutable state is touched only on the loop thread (`preconditionInLoop` guards the
    // public ways in; the off-loop ways go through `LoopDoor` or a post).
    //
    // Field order is cache order: a run that comes due (a deadline entry, then `commit`) reads
    // `core` and the state machine's first fields, which share the object header's cache line.
    @usableFromInline let core: RegistryCore
    // @exclusivity(unchecked), `state` and the fields below that say so: loop-confined state,
    // read or written on every change and never accessed across a call (see docs/safety.md).
    /// The task's stages, phase and counts (see `TaskStateMachine`).
    @exclusivity(unchecked) var state = TaskStateMachine()
    /// Whether the run of a generation is current, for `TaskContext.cancellationReason` on any
    /// thread (see `RunNotes`): written on the loop thread when a run starts, is
    /// cancelled or ends, read anywhere. In the two bytes of padding after `state`: no bigger a
    /// record.
    let runWord = Atomic<UInt16>(0)
    /// The low 32 bits of the slot's key's hash, set by the slot table (`SlotTable`), which
    /// compares it before the key. Here, in the padding after `state`, it costs no byte and
    /// shares the first cache line with the reference count that a chain walk touches anyway.
    /// Unchecked exclusivity: the slot table's, loop thread only, never held across a call;
    /// checked, each look-up from the inlined table pays a dynamic check (W1 +200 instructions).
    @exclusivity(unchecked) @usableFromInline final var slotHash: UInt32 = 0
    // @exclusivity(unchecked), these four, like `state`.
    /// The latest result a current run stored (`TaskContext.commit(result:)`) and the state of
    /// rare options (`RareTaskState`), boxed so that tasks that use neither pay a pointer.
    @exclusivity(unchecked) var extras: TaskExtras?
    /// The interned options of the latest declaration.
    @exclusivity(unchecked) @usableFromInline var options: TaskOptions
    /// The action of the latest generation while it has not started.
    @exclusivity(unchecked) var pendingAction: RunBody?
    /// Whether anyone observes this task's phases (the registry checks its table once per
    /// change of observers, not once per phase change). Placed in the padding after
    /// `pendingAction`'s tag: elsewhere it takes the record (with its key) into the next
    /// malloc size class, 16 bytes more per slot (W6).
    @exclusivity(unchecked) @usableFromInline var hasObservers = false
    /// The number of this record's node in the debounce windows of its options
    /// (`DebounceWindows`), zero when it has none. In the same padding as `hasObservers`, so
    /// no bigger a record. Checked: plain loads and stores, which need no dynamic check.
    var windowNode: UInt32 = 0
    /// The current run's task, while it is current. Unchecked exclusivity: as the fields above.
    @exclusivity(unchecked) var runningTask: RunTask?
    /// The latest declared identity, which the next declaration is compared with. Unchecked
    /// exclusivity: as the fields above.
    @exclusivity(unchecked) @usableFromInline var identity: any Hashable & Sendable = NoIdentity()
    @usableFromInline let name: TaskName
    var phase: TaskPhase { core.phase(of: self) }
    var generation: UInt64 { state.generation }
    var showsProgress: Bool { state.showsProgress }

    @usableFromInline
    init(name: TaskName, core: RegistryCore, options: TaskOptions) {
        self.name = name
        self.core = core
        self.options = options
    }

    @usableFromInline final func preconditionInLoop() { core.unretainedLoop.preconditionInLoop() }

    /// The registry's loop. May be read from any thread.
    @usableFromInline final var loop: any TaskLoop { core.loop }

    /// The way onto the loop thread from other executors. May be read from any thread.
    @usableFromInline final var door: LoopDoor { core.door }

    /// Stores the result of the run `generation`: in this record, or in every slot its shared
    /// run serves.
    @usableFromInline final func storeResult(_ result: any Sendable, generation: UInt64) {
        if let rare, !rare.sharedRuns.isEmpty {
            core.storeResult(result, of: self, generation: generation)
        } else {
            storeOwnResult(result)
        }
    }

    final func storeOwnResult(_ result: any Sendable) {
        core.trace(self, state.runGeneration, .resultStored)
        let extras = makeExtras()
        extras.result = result
        extras.resultGeneration = state.runGeneration
    }

    /// Whether the run `generation` is current: this task's current run, or a shared run that
    /// still serves a current slot (looked up only when this record's own answer is no).
    @usableFromInline final func isCurrentRun(_ generation: UInt64) -> Bool {
        state.isCurrentRun(generation)
            || (rare?.sharedRuns.isEmpty == false && core.sharedRunIsCurrent(self, generation: generation))
    }

    @usableFromInline final func noteStaleCommit(_ generation: UInt64) {
        core.tally { $0.staleCommitsDropped &+= 1 }
        core.trace(self, generation, .commitDropped)
    }

    /// A commit of the run `generation` landed: recorded when tracing. Loop thread (or, once
    /// the loop has shut down, the thread the commit runs on). Inlined into every commit, so
    /// that a registry not tracing pays one check of its core's `trace`, not a call.
    @inlinable final func noteCommitLanded(_ generation: UInt64) {
        if core.trace != nil { core.traceCommitLanded(self, generation) }
    }

    /// The slot's key, for the trace. Overridden by the keyed record.
    var traceKey: any Hashable & Sendable { "" }

    /// Whether this task's runs run on `loop` (not on an executor of their own).
    final func runsOnLoop(_ loop: any TaskLoop) -> Bool {
        guard let executor = options.values.executor.taskExecutor else { return true }
        return executor === loop
    }

    /// Sends a phase update to observers; overridden by the keyed record that knows its key.
    func publish(generation: UInt64, phase: TaskPhase) {}

    /// The last run of this removed task ended; overridden by the keyed record, whose registry
    /// then forgets it as the predecessor of a re-declared task.
    func drained() {}

    /// The Swift task of a run of a template's action on the loop; made by the keyed record,
    /// which knows its key's type.
    func makeKeyedRunTask(_ action: any KeyedTaskAction, _ context: TaskContext) -> RunTask {
        preconditionFailure("BUG DETECTED: a keyed action declared on a record without a key")
    }

    /// Calls a template's action with this record's key (off the loop, where a closure adapts it).
    func callKeyed(_ action: any KeyedTaskAction, _ context: TaskContext) async throws {
        preconditionFailure("BUG DETECTED: a keyed action declared on a record without a key")
    }
}

/// A record that knows its slot's key, for observers.
@usableFromInline
final class TaskRecord<Key: Hashable & Sendable>: AnyTaskRecord, @unchecked Sendable {
    // @unchecked Sendable: as its superclass; the one field it adds, `key`, is a `let` of a
    // Sendable type.
    @usableFromInline let key: Key
    /// The next record in this one's bucket of the slot table (`SlotTable`), where a slot's
    /// tasks follow one another: the same pointer chains the bucket and lists the slot.
    /// Unchecked exclusivity: the slot table's, loop thread only, never held across a call.
    @exclusivity(unchecked) @usableFromInline var nextInBucket: TaskRecord<Key>?

    @usableFromInline
    init(key: Key, name: TaskName, registry: TaskRegistry<Key>, options: TaskOptions) {
        self.key = key
        super.init(name: name, core: registry.core, options: options)
    }

    override var traceKey: any Hashable & Sendable { key }

    override func publish(generation: UInt64, phase: TaskPhase) {
        // Reaching the streams through the core keeps a pointer out of every record. A checked
        // cast (only ever called for a task someone observes): a record's core belongs to a
        // registry of the record's key type, whose streams are `PhaseStreams<Key>`.
        guard let streams = core.phaseStreams as? PhaseStreams<Key> else {
            preconditionFailure("BUG DETECTED: a TaskRecord<\(Key.self)> in a registry of another key type")
        }
        streams.publish(self, generation: generation, phase: phase)
    }

    override func makeKeyedRunTask(_ keyed: any KeyedTaskAction, _ context: TaskContext) -> RunTask {
        if let name = core.runTaskName(self, generation: context.generation) {
            return keyed.makeNamedRunTask(
                key: key, context: context, executor: loop, priority: options.priority, name: name)
        }
        return keyed.makeRunTask(key: key, context: context, executor: loop, priority: options.priority)
    }

    override func callKeyed(_ keyed: any KeyedTaskAction, _ context: TaskContext) async throws {
        try await keyed.call(key: key, context: context)
    }

    override func drained() {
        guard let owner = core.owner else { return }
        // A checked cast (once per removed task whose runs outlived it): a record's core is
        // owned by the registry of the record's key type.
        guard let registry = owner as? TaskRegistry<Key> else {
            preconditionFailure("BUG DETECTED: a TaskRecord<\(Key.self)> owned by a registry of another key type")
        }
        registry.forgetRemoved(self)
    }
}

/// The Swift task of a run. Its failure type is `any Error`, although a run's task never
/// throws (its action's error is handed to `runEnded`): a `Task<Void, Never>`'s operation is
/// wrapped in a thunk that converts it to the throwing function the runtime calls, one more
/// allocation (a 32-byte context) and call per run.
@usableFromInline typealias RunTask = Task<Void, any Error>
