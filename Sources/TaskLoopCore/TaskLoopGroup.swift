/// Loops that share a program's work, one per core: what a sharded registry spreads its keys
/// over. `UVLoopGroup` is one; any other set of loops can be passed as an array instead.
///
/// May be used from any thread.
public protocol TaskLoopGroup: AnyObject, Sendable {
    /// The group's loops, in a fixed order. May be read from any thread.
    var taskLoops: [any TaskLoop] { get }
}

extension TaskLoopGroup {
    /// The index, in `0..<shardCount`, of the shard that owns a key with hash value `hash`:
    /// the one mapping from hash to shard used by a group's `loop(forHash:)`, the sharded
    /// registry and the server, so that a key always lands on the same loop whichever of them
    /// places it.
    ///
    /// The hash is taken as an unsigned bit pattern, so negative hashes map like any other.
    /// Within one process run only: Swift seeds `hashValue` per process.
    ///
    /// May be called from any thread.
    /// - Parameters:
    ///   - hash: the key's `hashValue`.
    ///   - shardCount: the number of shards; must be at least 1.
    @inlinable
    public static func shardIndex(forHash hash: Int, shardCount: Int) -> Int {
        ShardPlacement.index(forHash: hash, shardCount: shardCount)
    }
}

/// The one mapping from a hash to a shard, for code that has no group type to name.
@usableFromInline
package enum ShardPlacement {
    @inlinable
    package static func index(forHash hash: Int, shardCount: Int) -> Int {
        Int(UInt(bitPattern: hash) % UInt(shardCount))
    }
}
