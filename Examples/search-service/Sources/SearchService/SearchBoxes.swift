import NIOCore
import TaskIdentity
import TaskLoopNIO

/// Every user's search box, spread over the event loops of the server's own
/// `MultiThreadedEventLoopGroup` by a `ShardedTaskRegistry`: one registry shard per event loop
/// (through `NIOTaskLoop`), a user's shard chosen by hashing the user id, and beside each shard
/// its `SearchShard` (the users' typed queries, the templates).
///
/// Why one registry per event loop, chosen by user: a registry's state lives on one loop
/// thread without locks, so one registry per loop uses every core with no lock between them,
/// and hashing the user (not the connection) keeps all of a user's keystrokes in one registry
/// even when they arrive on different connections, so the slot's identity rules hold. (Using
/// the registry of the connection's own event loop would save the hop below, but a user on two
/// connections would then have two search boxes.)
///
/// May be called from any task: every method hops to the user's event loop with
/// `registry.onShard(for:_:)`, which suspends the handler instead of blocking a thread.
final class SearchBoxes: Sendable {
    /// The task loops on the event loops, one per shard.
    let loops: [NIOTaskLoop]
    /// The registry shards, one per loop, placing users by `stableHash`.
    let registry: ShardedTaskRegistry<String>
    /// Each shard's typed queries and templates, in the order of `registry.shards`.
    let shards: [SearchShard]

    /// Creates one shard per event loop of `group`.
    ///
    /// May be called from any thread.
    init(group: any EventLoopGroup, latency: Duration) throws {
        loops = group.makeIterator().map { NIOTaskLoop($0) }
        // Counters every second, and the timers (time to start, run duration, loop lag), to
        // the bootstrapped metrics backend; spans to the bootstrapped tracer, if any.
        var configuration = RegistryConfiguration()
        configuration.metrics = .init(prefix: "search", interval: .seconds(1), timers: true)
        registry = try ShardedTaskRegistry<String>(
            loops: loops, configuration: configuration, shardHash: Self.stableHash)
        shards = try loops.map { try SearchShard(loop: $0, latency: latency) }
    }

    /// The placement hash of `user`: FNV-1a of the id's bytes, the same in every run (unlike
    /// `hashValue`, which Swift seeds per process), so that a user's shard can be predicted in
    /// a log.
    ///
    /// May be called from any thread.
    @Sendable static func stableHash(of user: String) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in user.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return Int(truncatingIfNeeded: hash)
    }

    /// A keystroke in `user`'s search box; returns the box's generation after it.
    ///
    /// - Throws: `RegistryError.shutDown` or `LoopError.shutDown` once the service is stopping.
    /// - Note: May be called from any task.
    func keystroke(user: String, query: String) async throws -> UInt64 {
        let box = shards[registry.shardIndex(for: user)]
        return try await registry.onShard(for: user) { shard in
            try box.keystroke(user: user, query: query, in: shard)
        }
    }

    /// The search box of `user`, read on its event loop.
    ///
    /// - Note: May be called from any task.
    func state(of user: String) async throws -> SearchState {
        let box = shards[registry.shardIndex(for: user)]
        return try await registry.onShard(for: user) { shard in try box.state(of: user, in: shard) }
    }

    /// The counters of every shard, added up.
    ///
    /// - Note: May be called from any task.
    func counters() async throws -> RegistryCounters {
        try await registry.countersSnapshot()
    }
}
