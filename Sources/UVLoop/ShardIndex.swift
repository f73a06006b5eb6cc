/// The index, in `0..<shardCount`, of the shard that owns a key with hash value `hash`: the one
/// mapping from hash to shard used by `UVLoopGroup.loop(forHash:)`, the sharded registry and the
/// server, so that a key always lands on the same loop whichever of them places it.
///
/// The hash is taken as an unsigned bit pattern, so negative hashes map like any other.
/// Within one process run only: Swift seeds `hashValue` per process.
///
/// May be called from any thread.
/// - Parameters:
///   - hash: the key's `hashValue`.
///   - shardCount: the number of shards; must be at least 1.
@inlinable
public func shardIndex(forHash hash: Int, shardCount: Int) -> Int {
    Int(UInt(bitPattern: hash) % UInt(shardCount))
}
