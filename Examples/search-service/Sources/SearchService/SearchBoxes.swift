import NIOCore
import TaskIdentity
import UVLoop

/// Every user's search box, spread over the event loops of the server's own
/// `MultiThreadedEventLoopGroup`: one `SearchShard` (one registry) per event loop, a user's
/// shard chosen by hashing the user id.
///
/// Why one registry per event loop, chosen by user: a registry's state lives on one loop
/// thread without locks, so one registry per loop uses every core with no lock between them,
/// and hashing the user (not the connection) keeps all of a user's keystrokes in one registry
/// even when they arrive on different connections, so the slot's identity rules hold. (Using
/// the registry of the connection's own event loop would save the hop below, but a user on two
/// connections would then have two search boxes.)
///
/// May be called from any task: every method hops to the user's event loop with
/// `loop.submit`, which suspends the handler instead of blocking a thread.
final class SearchBoxes: Sendable {
    let shards: [SearchShard]

    /// Creates one shard per event loop of `group`.
    ///
    /// May be called from any thread.
    init(group: any EventLoopGroup, latency: Duration) throws {
        shards = try group.makeIterator().map { try SearchShard(eventLoop: $0, latency: latency) }
    }

    /// The shard of `user`: FNV-1a of the id's bytes, stable across runs (unlike `hashValue`,
    /// which Swift seeds per process), so that a user's shard can be predicted in a log.
    ///
    /// May be called from any thread.
    func shard(for user: String) -> SearchShard {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in user.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return shards[Int(hash % UInt64(shards.count))]
    }

    /// A keystroke in `user`'s search box; returns the box's generation after it.
    ///
    /// - Throws: `RegistryError.shutDown` or `LoopError.shutDown` once the service is stopping.
    /// - Note: May be called from any task.
    func keystroke(user: String, query: String) async throws -> UInt64 {
        let shard = shard(for: user)
        return try await shard.loop.submit { try shard.keystroke(user: user, query: query) }
    }

    /// The search box of `user`, read on its event loop.
    ///
    /// - Note: May be called from any task.
    func state(of user: String) async throws -> SearchState {
        let shard = shard(for: user)
        return try await shard.loop.submit { try shard.state(of: user) }
    }

    /// The counters of every registry, added up.
    ///
    /// - Note: May be called from any task.
    func counters() async throws -> RegistryCounters {
        var sum = RegistryCounters()
        for shard in shards { sum = sum + (try await shard.registry.countersSnapshot()) }
        return sum
    }

    /// Cancels every search and waits for them to end, then shuts the task loops down; call it
    /// before the event loop group shuts down (NIO does not tell a `NIOTaskLoop` itself).
    ///
    /// - Note: May be called from any task.
    func shutdown() async {
        for shard in shards {
            await shard.registry.shutdown()
            await shard.loop.shutdown()
        }
    }
}
