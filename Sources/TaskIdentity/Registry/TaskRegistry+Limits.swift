import TaskLoopCore

/// How one concurrency limit stands in a registry: its places taken, and its queue. What
/// `TaskRegistry.limitState(of:)` reads on the loop thread and `limitStateSnapshot(of:)` hands
/// to any thread.
///
/// A value type; may be used on any thread.
public struct ConcurrencyLimitState: Hashable, Sendable, CustomStringConvertible {
    /// How many runs may hold a place at once (for a sharded registry, every shard's added up).
    public let maxRunning: Int
    /// Runs holding a place: started, their action not yet returned (cancelled ones included).
    public let running: Int
    /// Generations waiting in the limit's queue.
    public let queued: Int
    /// How long the slot that has waited longest has been in the queue (loop time); nil when
    /// nothing waits.
    public let oldestWait: Duration?
    /// How many generations may wait (`ConcurrencyLimit.maxQueued`; for a sharded registry,
    /// every shard's added up); nil for no bound.
    public let maxQueued: Int?
    /// Generations the full queue shed since the registry began (`ConcurrencyLimit.shedding`).
    public let shed: UInt64

    /// `running 64/64, queued 12/100, shed 3, oldest wait 0.25 seconds`.
    public var description: String {
        "running \(running)/\(maxRunning), queued \(queued)" + (maxQueued.map { "/\($0), shed \(shed)" } ?? "")
            + (oldestWait.map { ", oldest wait \($0)" } ?? "")
    }

    init(
        maxRunning: Int, running: Int, queued: Int, oldestWait: Duration?, maxQueued: Int? = nil, shed: UInt64 = 0
    ) {
        self.maxRunning = maxRunning
        self.running = running
        self.queued = queued
        self.oldestWait = oldestWait
        self.maxQueued = maxQueued
        self.shed = shed
    }

    /// Two registries' states of one limit, as one: places and queues added up, the longer
    /// wait kept. May be called from any thread.
    public static func + (lhs: Self, rhs: Self) -> Self {
        let waits = [lhs.oldestWait, rhs.oldestWait].compactMap { $0 }
        return Self(
            maxRunning: lhs.maxRunning + rhs.maxRunning, running: lhs.running + rhs.running,
            queued: lhs.queued + rhs.queued, oldestWait: waits.max(),
            maxQueued: lhs.maxQueued.flatMap { left in rhs.maxQueued.map { left + $0 } }, shed: lhs.shed + rhs.shed)
    }
}

extension TaskRegistry {
    /// How `limit` stands in this registry: its places taken and its queue (all zero, and no
    /// wait, for a limit no task of this registry was declared with).
    ///
    /// - Complexity: O(p) in the priorities waiting.
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `limitStateSnapshot(of:)` there).
    /// - Note: Loop thread only; never traps.
    public func limitState(of limit: ConcurrencyLimit) throws(RegistryError) -> ConcurrencyLimitState {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return core.limitState(of: limit)
    }

    /// `limitState(of:)` from any thread, in one hop to the loop.
    ///
    /// - Throws: `RegistryError.loopNotStarted` before the loop starts; `.shutDown` once it has
    ///   shut down.
    /// - Note: May be called from any task.
    public func limitStateSnapshot(of limit: ConcurrencyLimit) async throws(RegistryError) -> ConcurrencyLimitState {
        try await onLoop { [core] in core.limitState(of: limit) }
    }
}

extension RegistryCore {
    func limitState(of limit: ConcurrencyLimit) -> ConcurrencyLimitState {
        guard let queue = limits.existingQueue(for: limit) else {
            return ConcurrencyLimitState(
                maxRunning: limit.maxRunning, running: 0, queued: 0, oldestWait: nil, maxQueued: limit.maxQueued)
        }
        let now = unretainedLoop.now.nanoseconds
        return ConcurrencyLimitState(
            maxRunning: limit.maxRunning, running: queue.running, queued: queue.count,
            oldestWait: queue.earliestSince.map { .nanoseconds(now &- $0) }, maxQueued: limit.maxQueued,
            shed: queue.shedCount)
    }
}
