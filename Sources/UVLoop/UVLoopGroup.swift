import CLibUV
import Synchronization

/// Several `UVLoop`s, each on its own thread, for using more than one core.
///
/// ```swift
/// let group = try UVLoopGroup(loops: 2)
/// let loop = group.loop(forHash: key.hashValue)   // the same key always maps to the same loop
/// try group.syncShutdown()
/// ```
///
/// The group is `Sendable`; every member may be called from any thread, except that
/// `syncShutdown()` may not be called on one of the group's own loop threads.
public final class UVLoopGroup: Sendable {
    /// The loops, started, in a fixed order.
    public let loops: [UVLoop]
    private let nextIndex = Atomic<Int>(0)

    /// Creates and starts `count` loops.
    ///
    /// - Throws: `LoopError` if a loop cannot start (the ones already started are shut down),
    ///   or `LoopError.libuv(UV_EINVAL)` for a count below 1.
    /// - Note: May be called from any thread.
    public convenience init(loops count: Int, namePrefix: String = "uv-loop") throws(LoopError) {
        try self.init(loops: count, namePrefix: namePrefix, log: LoopLog())
    }

    init(loops count: Int, namePrefix: String, log: LoopLog) throws(LoopError) {
        guard count >= 1 else {
            throw LoopError(.libuv(UV_EINVAL.rawValue), operation: "UVLoopGroup.init(loops: \(count))")
        }
        var loops: [UVLoop] = []
        for index in 0..<count {
            let loop = UVLoop(name: "\(namePrefix)-\(index)", log: log)
            do {
                try loop.start()
            } catch {
                for started in loops { try? started.syncShutdown() }
                throw error
            }
            loops.append(loop)
        }
        self.loops = loops
    }

    /// The loops in turn (round robin), for spreading work that has no key.
    public func next() -> UVLoop {
        let index = nextIndex.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[Int(UInt(bitPattern: index) % UInt(loops.count))]
    }

    /// The loop for a hash value: the same hash always maps to the same loop.
    public func loop(forHash hash: Int) -> UVLoop {
        loops[Self.shardIndex(forHash: hash, shardCount: loops.count)]
    }

    /// The index, in `0..<shardCount`, of the shard that owns a key with hash value `hash`:
    /// the one mapping from hash to shard used by `loop(forHash:)`, the sharded registry and
    /// the server, so that a key always lands on the same loop whichever of them places it.
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
        Int(UInt(bitPattern: hash) % UInt(shardCount))
    }

    /// Shuts every loop down and waits for their threads.
    ///
    /// - Throws: `LoopError.calledOnLoopThread` if called on one of the group's loop threads.
    public func syncShutdown() throws(LoopError) {
        if loops.contains(where: { $0.inLoop }) {
            throw LoopError(.calledOnLoopThread, operation: "UVLoopGroup.syncShutdown")
        }
        for loop in loops { try loop.syncShutdown() }
    }

    /// Shuts every loop down without blocking a thread.
    public func shutdown() async {
        for loop in loops { await loop.shutdown() }
    }
}
