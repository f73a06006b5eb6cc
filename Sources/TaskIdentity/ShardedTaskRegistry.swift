import UVLoop

/// A task registry spread over the loops of a `UVLoopGroup`: each key belongs to one shard (one
/// loop), chosen by its hash, so that slots use every core while each slot keeps the
/// single-thread semantics of `TaskRegistry`.
///
/// Also over any loops (`init(loops:)`): libuv loops, `NIOTaskLoop`s, test loops.
///
/// `Sendable`. Declarations, controls, snapshots and streams may be called from any thread
/// (calls to a shard from off its loop are posted, see `TaskRegistry`); the synchronous
/// queries and observed declarations are for the key's shard's loop thread, and throw
/// `RegistryError.calledOffLoopThread` elsewhere.
public final class ShardedTaskRegistry<Key: Hashable & Sendable>: Sendable {
    /// One registry per loop of the group, in the group's order.
    public let shards: [TaskRegistry<Key>]

    /// Creates one shard per loop of `group`.
    ///
    /// May be called from any thread.
    public init(group: UVLoopGroup) {
        shards = group.loops.map { TaskRegistry<Key>(loop: $0) }
    }

    /// Creates one shard per loop of `loops` (libuv loops, a NIO application's own event loops
    /// through `NIOTaskLoop`, or test loops), in that order. `loops` must not be empty (a
    /// programming error: it traps).
    ///
    /// May be called from any thread.
    public init(loops: [any TaskLoop]) {
        precondition(!loops.isEmpty, "a sharded registry needs at least one loop")
        shards = loops.map { TaskRegistry<Key>(loop: $0) }
    }

    /// The shard that owns `key`: the same key always maps to the same shard. With one shard
    /// the key is not hashed at all (its shard hashes it once, for its slot table).
    ///
    /// May be called from any thread.
    @inlinable
    public func shard(for key: Key) -> TaskRegistry<Key> {
        let count = shards.count
        if count == 1 { return shards[0] }
        return shards[shardIndex(forHash: key.hashValue, shardCount: count)]
    }

    /// Declares a task on the key's shard; see `TaskRegistry.task(_:name:id:priority:debounce:throttle:policy:progressDelay:executor:action:)`.
    ///
    /// - Throws: `RegistryError`.
    public func task<each ID: Hashable & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        id: repeat each ID,
        priority: TaskPriority = .userInitiated,
        debounce: Duration = .zero,
        throttle: Duration = .zero,
        policy: RestartPolicy = .cancelPrevious,
        progressDelay: Duration? = nil,
        executor: ActionExecutor = .loop,
        action: @escaping TaskAction
    ) throws(RegistryError) {
        try shard(for: key).task(
            key, name: name, id: repeat each id, priority: priority, debounce: debounce, throttle: throttle,
            policy: policy, progressDelay: progressDelay, executor: executor, action: action)
    }

    /// Declares the task of `template` on the key's shard; see
    /// `TaskRegistry.task(_:id:template:)`.
    ///
    /// - Throws: as `TaskRegistry.task(_:id:template:)`.
    @inlinable
    public func task<each ID: Hashable & Sendable>(
        _ key: Key, id: repeat each ID, template: TaskTemplate<Key>
    ) throws(RegistryError) {
        try shard(for: key).task(key, id: repeat each id, template: template)
    }

    /// Declares the task of a typed `template` on the key's shard; see
    /// `TaskRegistry.task(_:id:template:)`.
    ///
    /// - Throws: as `TaskRegistry.task`.
    @inlinable
    public func task<ID>(_ key: Key, id: ID, template: TypedTaskTemplate<Key, ID>) throws(RegistryError) {
        try shard(for: key).task(key, id: id, template: template)
    }

    /// Declares an observed task on the key's shard; see
    /// `TaskRegistry.task(_:name:tracking:priority:debounce:throttle:policy:progressDelay:executor:action:)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` unless called on the loop thread of the
    ///   key's shard (`shard(for: key).loop`); otherwise as `TaskRegistry.task`.
    /// - Note: The key's shard's loop thread only.
    public func task<ID: Hashable & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        tracking identity: @escaping () -> ID,
        priority: TaskPriority = .userInitiated,
        debounce: Duration = .zero,
        throttle: Duration = .zero,
        policy: RestartPolicy = .cancelPrevious,
        progressDelay: Duration? = nil,
        executor: ActionExecutor = .loop,
        action: @escaping ObservedTaskAction<ID>
    ) throws(RegistryError) {
        try shard(for: key).task(
            key, name: name, tracking: identity, priority: priority, debounce: debounce, throttle: throttle,
            policy: policy, progressDelay: progressDelay, executor: executor, action: action)
    }

    /// Removes slot `key` from its shard; see `TaskRegistry.remove(_:)`.
    ///
    /// - Throws: as `TaskRegistry.remove(_:)`.
    public func remove(_ key: Key) throws(RegistryError) {
        try shard(for: key).remove(key)
    }

    /// Cancels a task in place on the key's shard; see `TaskRegistry.cancel(_:name:)`.
    ///
    /// - Throws: as `TaskRegistry.cancel(_:name:)`.
    public func cancel(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try shard(for: key).cancel(key, name: name)
    }

    /// Starts a debounced or throttled task now, on the key's shard; see
    /// `TaskRegistry.runNow(_:name:)`.
    ///
    /// - Throws: as `TaskRegistry.runNow(_:name:)`.
    public func runNow(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try shard(for: key).runNow(key, name: name)
    }

    /// Drops a task's generation that has not started, on the key's shard; see
    /// `TaskRegistry.dropPending(_:name:)`.
    ///
    /// - Throws: as `TaskRegistry.dropPending(_:name:)`.
    public func dropPending(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try shard(for: key).dropPending(key, name: name)
    }

    /// The task as it is now, read on its shard's loop; see `TaskRegistry.snapshot(of:name:)`.
    ///
    /// - Throws: as `TaskRegistry.snapshot(of:name:)`.
    public func snapshot(of key: Key, name: TaskName = .main) async throws(RegistryError) -> TaskSnapshot? {
        try await shard(for: key).snapshot(of: key, name: name)
    }

    /// Every task of the slot, read on its shard's loop; see `TaskRegistry.snapshot(ofSlot:)`.
    ///
    /// - Throws: as `TaskRegistry.snapshot(ofSlot:)`.
    public func snapshot(ofSlot key: Key) async throws(RegistryError) -> [TaskName: TaskSnapshot] {
        try await shard(for: key).snapshot(ofSlot: key)
    }

    /// The phase of a task, on its shard's loop thread; see `TaskRegistry.phase(of:name:)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off that thread.
    /// - Note: The key's shard's loop thread only; never traps.
    public func phase(of key: Key, name: TaskName = .main) throws(RegistryError) -> TaskPhase? {
        try shard(for: key).phase(of: key, name: name)
    }

    /// Whether a task's progress signal is on; see `TaskRegistry.showsProgress(of:name:)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the key's shard's loop thread.
    /// - Note: The key's shard's loop thread only; never traps.
    public func showsProgress(of key: Key, name: TaskName = .main) throws(RegistryError) -> Bool {
        try shard(for: key).showsProgress(of: key, name: name)
    }

    /// A task's generation; see `TaskRegistry.generation(of:name:)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the key's shard's loop thread.
    /// - Note: The key's shard's loop thread only; never traps.
    public func generation(of key: Key, name: TaskName = .main) throws(RegistryError) -> UInt64? {
        try shard(for: key).generation(of: key, name: name)
    }

    /// A task's latest stored result; see `TaskRegistry.result(of:name:as:)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the key's shard's loop thread.
    /// - Note: The key's shard's loop thread only; never traps.
    public func result<Value>(of key: Key, name: TaskName = .main, as type: Value.Type) throws(RegistryError) -> Value?
    {
        try shard(for: key).result(of: key, name: name, as: type)
    }

    /// Whether slot `key` exists; see `TaskRegistry.contains(_:)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the key's shard's loop thread.
    /// - Note: The key's shard's loop thread only; never traps.
    public func contains(_ key: Key) throws(RegistryError) -> Bool {
        try shard(for: key).contains(key)
    }

    /// The phases of a task, from its shard; see `TaskRegistry.phaseUpdates(of:name:bufferingPolicy:)`.
    ///
    /// May be called from any thread.
    public func phaseUpdates(
        of key: Key, name: TaskName = .main,
        bufferingPolicy: AsyncStream<TaskPhaseUpdate>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<TaskPhaseUpdate> {
        shard(for: key).phaseUpdates(of: key, name: name, bufferingPolicy: bufferingPolicy)
    }

    /// Waits until every call posted to any shard before this one has been applied.
    ///
    /// May be called from any task.
    public func flush() async {
        for shard in shards { await shard.flush() }
    }

    /// The counters of all shards added up, each read on its own loop.
    ///
    /// - Throws: as `TaskRegistry.countersSnapshot()`.
    /// - Note: May be called from any task.
    public func countersSnapshot() async throws(RegistryError) -> RegistryCounters {
        var total = RegistryCounters()
        for shard in shards { total = total + (try await shard.countersSnapshot()) }
        return total
    }

    /// Starts shutting every shard down; see `TaskRegistry.startShutdown()`.
    ///
    /// May be called from any thread.
    public func startShutdown() {
        for shard in shards { shard.startShutdown() }
    }

    /// Shuts every shard down and waits for their actions to end.
    ///
    /// May be called from any task.
    public func shutdown() async {
        startShutdown()
        for shard in shards { await shard.shutdown() }
    }
}
