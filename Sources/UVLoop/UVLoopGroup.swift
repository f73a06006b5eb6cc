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
public final class UVLoopGroup: TaskLoopGroup {
    /// The loops, started, in a fixed order.
    public let loops: [UVLoop]
    /// The loops as the loop contract sees them (`TaskLoopGroup`), for a sharded registry.
    public var taskLoops: [any TaskLoop] { loops }
    private let nextIndex = Atomic<Int>(0)

    /// Creates and starts `count` loops.
    ///
    /// - Throws: `LoopError` if a loop cannot start (the ones already started are shut down),
    ///   or `LoopError.libuv(UV_EINVAL)` for a count below 1.
    /// - Note: May be called from any thread.
    public convenience init(loops count: Int, namePrefix: String = "uv-loop") throws(LoopError) {
        try self.init(loops: count, namePrefix: namePrefix, log: LibraryLog())
    }

    init(loops count: Int, namePrefix: String, log: LibraryLog) throws(LoopError) {
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
