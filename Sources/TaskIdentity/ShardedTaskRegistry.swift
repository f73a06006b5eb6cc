import UVLoop

/// A task registry spread over the loops of a `UVLoopGroup`: each key belongs to one shard (one
/// loop), chosen by its hash, so that slots use every core while each slot keeps the
/// single-thread semantics of `TaskRegistry`.
///
/// `Sendable`; every member may be called from any thread (calls to a shard from off its loop
/// are posted, see `TaskRegistry`).
public final class ShardedTaskRegistry<Key: Hashable & Sendable>: Sendable {
    /// One registry per loop of the group, in the group's order.
    public let shards: [TaskRegistry<Key>]

    /// Creates one shard per loop of `group`.
    public init(group: UVLoopGroup) {
        shards = group.loops.map { TaskRegistry<Key>(loop: $0) }
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
    /// - Throws: `RegistryError.shutDown` after shutdown.
    @inlinable
    public func task<each ID: Hashable & Sendable>(
        _ key: Key, id: repeat each ID, template: TaskTemplate<Key>
    ) throws(RegistryError) {
        try shard(for: key).task(key, id: repeat each id, template: template)
    }

    /// Removes slot `key` from its shard; see `TaskRegistry.remove(_:)`.
    ///
    /// - Throws: `RegistryError.shutDown` after shutdown.
    public func remove(_ key: Key) throws(RegistryError) {
        try shard(for: key).remove(key)
    }

    /// Waits until every call posted to any shard before this one has been applied.
    public func flush() async {
        for shard in shards { await shard.flush() }
    }

    /// The counters of all shards added up.
    ///
    /// - Throws: `LoopError` if a shard's loop has shut down.
    public func countersSnapshot() async throws -> RegistryCounters {
        var total = RegistryCounters()
        for shard in shards { total = total + (try await shard.countersSnapshot()) }
        return total
    }

    /// Shuts every shard down and waits for their actions to end.
    public func shutdown() async {
        for shard in shards { shard.startShutdown() }
        for shard in shards { await shard.shutdown() }
    }
}
