import TaskLoopCore

#if Tracing
    import Tracing
#endif

/// A task registry spread over several loops: each key belongs to one shard (one loop, one
/// `TaskRegistry`), chosen from the key's hash, so that slots use every core while each slot
/// keeps the single-thread semantics of `TaskRegistry`.
///
/// Over a `UVLoopGroup`, or over any loops (`init(loops:)`): libuv loops, `NIOTaskLoop`s (module
/// `TaskLoopNIO`) on a NIO server's own event loops, test loops. Declarations and controls go to the key's shard
/// from any thread; everything else a shard answers only on its own loop thread, and
/// `onShard(for:_:)` runs code there:
///
/// ```swift
/// let registry = ShardedTaskRegistry<String>(group: group)
/// try registry.task(user, id: query) { context in … }            // any thread
/// let phase = try await registry.onShard(for: user) { shard in    // any task
///     try shard.phase(of: user)                                   // on the user's loop
/// }
/// ```
///
/// `Sendable`. Every member may be called from any thread or task (calls to a shard from off
/// its loop are posted, see `TaskRegistry`).
public final class ShardedTaskRegistry<Key: Hashable & Sendable>: Sendable {
    /// One registry per loop, in the loops' order. A shard's synchronous queries and observed
    /// declarations are for its own loop thread (`onShard(for:_:)` runs code there).
    ///
    /// May be read from any thread.
    public let shards: [TaskRegistry<Key>]

    /// How a key is placed; nil: its `hashValue`.
    @usableFromInline
    let shardHash: (@Sendable (Key) -> Int)?

    /// Creates one shard per loop of `group`, in the group's order. With the default placement
    /// a key lands on `group.loop(forHash: key.hashValue)`.
    ///
    /// May be called from any thread.
    /// - Parameters:
    ///   - group: one shard per loop of the group.
    ///   - shardHash: the hash that places a key (see `init(loops:shardHash:)`).
    public convenience init(group: some TaskLoopGroup, shardHash: (@Sendable (Key) -> Int)? = nil) {
        self.init(loops: group.taskLoops, shardHash: shardHash)
    }

    /// Creates one shard per loop of `group`, in the group's order, each with `configuration`'s
    /// settings (see `init(loops:configuration:shardHash:)`).
    ///
    /// - Throws: `RegistryError` for a setting out of range (see `RegistryConfiguration`).
    /// - Note: May be called from any thread.
    public convenience init(
        group: some TaskLoopGroup, configuration: RegistryConfiguration, shardHash: (@Sendable (Key) -> Int)? = nil
    ) throws(RegistryError) {
        try self.init(loops: group.taskLoops, configuration: configuration, shardHash: shardHash)
    }

    /// Creates one shard per loop of `loops` (libuv loops, a NIO application's own event loops
    /// through `NIOTaskLoop` of the `TaskLoopNIO` module, or test loops), in that order.
    /// `loops` must not be empty (a programming error: it traps).
    ///
    /// May be called from any thread.
    /// - Parameters:
    ///   - loops: one loop per shard.
    ///   - shardHash: the hash that places a key: shard `hash % loops.count`, the hash taken as
    ///     unsigned (`TaskLoopGroup.shardIndex(forHash:shardCount:)`). Nil (the default) uses `hashValue`,
    ///     which Swift seeds per process; give a hash of your own for a placement that is the
    ///     same in every process (a user's shard named in a log), or one you choose (`{ $0 }`
    ///     puts a non-negative integer key `k` on shard `k % loops.count`). Called on every
    ///     call that takes a key, from any thread: it must be cheap and must not fail.
    public convenience init(loops: [any TaskLoop], shardHash: (@Sendable (Key) -> Int)? = nil) {
        self.init(shards: loops.map { TaskRegistry<Key>(loop: $0) }, shardHash: shardHash)
    }

    /// Creates one shard per loop of `loops`, in that order, each with `configuration`'s
    /// settings: its limits, logger and trace apply to each shard on its own, and a metrics
    /// export adds the dimension `shard` (the shard's index) to each shard's metrics.
    ///
    /// - Throws: `RegistryError` for a setting out of range (see `RegistryConfiguration`).
    /// - Note: May be called from any thread.
    public convenience init(
        loops: [any TaskLoop], configuration: RegistryConfiguration, shardHash: (@Sendable (Key) -> Int)? = nil
    ) throws(RegistryError) {
        try configuration.validate()
        let shards = loops.enumerated().map { index, loop in
            var shardConfiguration = configuration
            #if Metrics
                shardConfiguration.metrics?.dimensions.append(("shard", "\(index)"))
            #endif
            return TaskRegistry<Key>(loop: loop, checked: shardConfiguration)
        }
        self.init(shards: shards, shardHash: shardHash)
    }

    private init(shards: [TaskRegistry<Key>], shardHash: (@Sendable (Key) -> Int)?) {
        precondition(!shards.isEmpty, "a sharded registry needs at least one loop")
        self.shards = shards
        self.shardHash = shardHash
    }

    /// The index in `shards` of the shard that owns `key`: the same key always maps to the same
    /// shard. With one shard the key is not hashed at all (its shard hashes it once, for its
    /// slot table).
    ///
    /// May be called from any thread.
    @inlinable
    public func shardIndex(for key: Key) -> Int {
        let count = shards.count
        if count == 1 { return 0 }
        return ShardPlacement.index(forHash: shardHash?(key) ?? key.hashValue, shardCount: count)
    }

    /// The shard that owns `key`.
    ///
    /// May be called from any thread; the shard's synchronous members are for its loop thread.
    @inlinable
    public func shard(for key: Key) -> TaskRegistry<Key> {
        shards[shardIndex(for: key)]
    }

    /// Runs `body` with the key's shard on that shard's loop thread, where its synchronous
    /// queries (`phase(of:)`, `result(of:as:)`, `contains(_:)`, …) and observed declarations
    /// work, and returns what `body` returns. On that thread already, `body` runs at once;
    /// elsewhere the caller suspends (no thread blocks) until the loop has run it.
    ///
    /// With the trait `Tracing`, `body` runs with the caller's `ServiceContext.current`, so a
    /// task it declares is traced as the caller's child.
    ///
    /// - Throws: what `body` throws, or `LoopError` when the shard's loop cannot run it (it
    ///   has shut down, or has not started).
    /// - Note: May be called from any task.
    public func onShard<Result: Sendable>(
        for key: Key, _ body: @escaping @Sendable (TaskRegistry<Key>) throws -> Result
    ) async throws -> Result {
        let shard = shard(for: key)
        #if Tracing
            // The loop runs `body` as a closure, outside this task: its task-locals are bound
            // again there.
            let context = ServiceContext.current
            return try await shard.loop.submit { try ServiceContext.$current.withValue(context) { try body(shard) } }
        #else
            return try await shard.loop.submit { try body(shard) }
        #endif
    }

    /// Declares a task on the key's shard; see `TaskRegistry.task(_:name:id:priority:debounce:maxWait:throttle:policy:progressDelay:timeout:limit:retry:staleAfter:refreshEvery:executor:action:)`.
    ///
    /// - Throws: `RegistryError`.
    public func task<each ID: Hashable & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        id: repeat each ID,
        priority: TaskPriority = TaskOptionDefaults.priority,
        debounce: Duration = TaskOptionDefaults.debounce,
        maxWait: Duration? = TaskOptionDefaults.maxWait,
        throttle: Duration = TaskOptionDefaults.throttle,
        policy: RestartPolicy = TaskOptionDefaults.policy,
        progressDelay: Duration? = TaskOptionDefaults.progressDelay,
        timeout: Duration? = TaskOptionDefaults.timeout,
        limit: ConcurrencyLimit? = TaskOptionDefaults.limit,
        retry: RetryPolicy? = TaskOptionDefaults.retry,
        staleAfter: Duration? = TaskOptionDefaults.staleAfter,
        refreshEvery: Duration? = TaskOptionDefaults.refreshEvery,
        executor: ActionExecutor = TaskOptionDefaults.executor,
        action: @escaping TaskAction
    ) throws(RegistryError) {
        try shard(for: key).task(
            key, name: name, id: repeat each id, priority: priority, debounce: debounce, maxWait: maxWait,
            throttle: throttle,
            policy: policy, progressDelay: progressDelay, timeout: timeout, limit: limit, retry: retry,
            staleAfter: staleAfter, refreshEvery: refreshEvery,
            executor: executor,
            action: action)
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

    /// Removes every slot, on every shard, whose key satisfies `isRemoved` (see
    /// `TaskRegistry.removeAll(where:)`), each shard on its loop; returns how many.
    ///
    /// - Throws: `RegistryError.shutDown` after shutdown, or the `LoopError` of a shard's loop
    ///   that cannot run it.
    /// - Note: May be called from any task; `isRemoved` runs on the shards' loop threads.
    @discardableResult
    public func removeAll(where isRemoved: @escaping @Sendable (Key) -> Bool) async throws -> Int {
        var removed = 0
        for shard in shards {
            removed += try await shard.loop.submit { () throws -> Int in try shard.removeAll(where: isRemoved) }
        }
        return removed
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

    /// How `limit` stands on every shard, added up (`ConcurrencyLimitState.+`): each shard
    /// caps its own runs, so `maxRunning` is the limit's times the number of shards.
    ///
    /// - Throws: as `TaskRegistry.limitStateSnapshot(of:)`.
    /// - Note: May be called from any task.
    public func limitStateSnapshot(of limit: ConcurrencyLimit) async throws(RegistryError) -> ConcurrencyLimitState {
        var total: ConcurrencyLimitState?
        for shard in shards {
            let state = try await shard.limitStateSnapshot(of: limit)
            total = total.map { $0 + state } ?? state
        }
        return total!  // a sharded registry has at least one shard
    }

    /// Starts recording every shard's trace, each into a ring of `capacity` events; see
    /// `TaskRegistry.startTrace(capacity:)`.
    ///
    /// - Throws: `RegistryError.invalidTraceCapacity` for a capacity below 1; `.shutDown`
    ///   (with its `loopError`) when a shard's loop has shut down.
    /// - Note: May be called from any task.
    public func startTrace(capacity: Int = RegistryTrace.defaultCapacity) async throws(RegistryError) {
        guard capacity >= 1 else { throw .invalidTraceCapacity(capacity) }
        for shard in shards {
            try await Self.onLoop(of: shard) { (shard) throws(RegistryError) in try shard.startTrace(capacity: capacity)
            }
        }
    }

    /// Every shard's trace so far, merged (`RegistryTrace(merging:)`), while recording goes on;
    /// `nil` when no shard is recording.
    ///
    /// - Complexity: O(n log n) in the events kept.
    /// - Throws: `RegistryError.shutDown` when a shard's loop has shut down.
    /// - Note: May be called from any task.
    public func currentTrace() async throws(RegistryError) -> RegistryTrace? {
        try await mergedTrace { (shard) throws(RegistryError) in try shard.currentTrace() }
    }

    /// The events every shard's trace holds now, summed, without copying them; `nil` when no
    /// shard is recording. See `TaskRegistry.traceEventCount()`.
    ///
    /// - Throws: `RegistryError.shutDown` when a shard's loop has shut down.
    /// - Note: May be called from any task.
    public func traceEventCount() async throws(RegistryError) -> Int? {
        var total: Int?
        for shard in shards {
            let count = try await Self.onLoop(of: shard) { (shard) throws(RegistryError) in try shard.traceEventCount()
            }
            if let count { total = (total ?? 0) + count }
        }
        return total
    }

    /// Stops every shard's trace and returns them merged; `nil` when no shard was recording.
    ///
    /// - Throws: `RegistryError.shutDown` when a shard's loop has shut down.
    /// - Note: May be called from any task.
    @discardableResult
    public func stopTrace() async throws(RegistryError) -> RegistryTrace? {
        try await mergedTrace { (shard) throws(RegistryError) in try shard.stopTrace() }
    }

    /// The traces `take` gives on each shard's loop, merged; `nil` when none gives one.
    private func mergedTrace(
        _ take: @escaping @Sendable (TaskRegistry<Key>) throws(RegistryError) -> RegistryTrace?
    ) async throws(RegistryError) -> RegistryTrace? {
        var traces: [RegistryTrace] = []
        for shard in shards {
            if let trace = try await Self.onLoop(of: shard, take) { traces.append(trace) }
        }
        return traces.isEmpty ? nil : RegistryTrace(merging: traces)
    }

    /// `body` on `shard`'s loop thread, with the loop's refusal as a `RegistryError`.
    private static func onLoop<Result: Sendable>(
        of shard: TaskRegistry<Key>, _ body: @escaping @Sendable (TaskRegistry<Key>) throws(RegistryError) -> Result
    ) async throws(RegistryError) -> Result {
        do {
            return try await shard.loop.submit { try body(shard) }
        } catch let error as RegistryError {
            throw error
        } catch let error as LoopError {
            throw RegistryError(loopRefused: error)
        } catch {
            throw RegistryError(.loopFailed, detail: "\(error)")
        }
    }

    /// Starts shutting every shard down; see `TaskRegistry.startShutdown()`.
    ///
    /// May be called from any thread.
    public func startShutdown() {
        for shard in shards { shard.startShutdown() }
    }

    /// Starts shutting every shard down gracefully; see `TaskRegistry.startShutdown(gracePeriod:)`.
    ///
    /// May be called from any thread.
    public func startShutdown(gracePeriod: Duration) {
        for shard in shards { shard.startShutdown(gracePeriod: gracePeriod) }
    }

    /// Shuts every shard down gracefully, at once, and waits for their actions to end; see
    /// `TaskRegistry.shutdown(gracePeriod:)`.
    ///
    /// May be called from any task.
    public func shutdown(gracePeriod: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            for shard in shards { group.addTask { await shard.shutdown(gracePeriod: gracePeriod) } }
        }
    }

    /// Shuts every shard down and waits for their actions to end.
    ///
    /// May be called from any task.
    public func shutdown() async {
        startShutdown()
        for shard in shards { await shard.shutdown() }
    }
}
