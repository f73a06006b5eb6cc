import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

@Suite("ShardedTaskRegistry: placement, work on a key's shard, shutdown")
struct ShardedRegistryTests {
    @Test func shardedRegistryKeepsEachKeyOnOneLoop() async throws {
        let group = try UVLoopGroup(loops: 2)
        let registry = ShardedTaskRegistry<String>(group: group)
        let wrongLoop = Confined(0)
        for index in 0..<200 {
            let key = "k\(index)"
            let owner = registry.shard(for: key).loop
            try registry.task(key, id: index, debounce: .milliseconds(1)) { _ in
                if !owner.inLoop { wrongLoop.value += 1 }
            }
        }
        await registry.flush()
        while try await registry.countersSnapshot().finished < 200 { try await Task.sleep(for: .milliseconds(1)) }
        let counters = try await registry.countersSnapshot()
        #expect(counters.liveSlots == 200)
        #expect(registry.shards.allSatisfy { shard in registry.shards.filter { $0.loop === shard.loop }.count == 1 })
        await registry.shutdown()
        try group.syncShutdown()
        #expect(wrongLoop.value == 0)
        #expect(group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
    }

    @Test func aShardHashOfOnesOwnPlacesEachKey() async throws {
        let group = try UVLoopGroup(loops: 3)
        let registry = ShardedTaskRegistry<Int>(group: group, shardHash: { $0 })
        // `{ $0 }` puts key k on shard k % 3; negative hashes are taken as unsigned.
        #expect((0..<9).map { registry.shardIndex(for: $0) } == [0, 1, 2, 0, 1, 2, 0, 1, 2])
        #expect(registry.shardIndex(for: -1) == Int(UInt(bitPattern: -1) % 3))
        for key in 0..<9 { #expect(registry.shard(for: key) === registry.shards[key % 3]) }
        await registry.shutdown()
        try group.syncShutdown()
    }

    @Test func theDefaultPlacementIsTheGroupsOwn() async throws {
        let group = try UVLoopGroup(loops: 2)
        let registry = ShardedTaskRegistry<String>(group: group)
        for index in 0..<50 {
            let key = "key-\(index)"
            #expect(registry.shard(for: key).loop === group.loop(forHash: key.hashValue))
        }
        await registry.shutdown()
        try group.syncShutdown()
    }

    @Test func oneShardNeverHashes() async throws {
        let group = try UVLoopGroup(loops: 1)
        let calls = Atomic<Int>(0)
        let registry = ShardedTaskRegistry<Int>(
            group: group,
            shardHash: { key in
                calls.add(1, ordering: .relaxed)
                return key
            })
        for key in 0..<10 { #expect(registry.shardIndex(for: key) == 0) }
        #expect(calls.load(ordering: .relaxed) == 0)
        await registry.shutdown()
        try group.syncShutdown()
    }

    @Test func theTraceEventCountSumsTheShards() async throws {
        let group = try UVLoopGroup(loops: 2)
        let registry = ShardedTaskRegistry<Int>(group: group, shardHash: { $0 })
        #expect(try await registry.traceEventCount() == nil)
        try await registry.startTrace(capacity: 2)
        #expect(try await registry.traceEventCount() == 0)
        // Three declarations a shard, each recorded: both rings full at 2.
        for key in 0..<6 { try registry.task(key, id: 1, debounce: .seconds(60)) { _ in } }
        await registry.flush()
        #expect(try await registry.traceEventCount() == 4)
        #expect(try await registry.stopTrace()?.eventCount == 4)
        #expect(try await registry.traceEventCount() == nil)
        await registry.shutdown()
        try group.syncShutdown()
    }

    @Test func onShardRunsOnTheKeysLoopWithItsShard() async throws {
        let group = try UVLoopGroup(loops: 2)
        let registry = ShardedTaskRegistry<Int>(group: group, shardHash: { $0 })
        for key in 0..<4 {
            try registry.task(key, id: "v\(key)") { context in context.commit(result: key * 10) }
        }
        await registry.flush()
        while try await registry.countersSnapshot().finished < 4 { try await Task.sleep(for: .milliseconds(1)) }
        for key in 0..<4 {
            let (onOwnLoop, isOwnShard, result) = try await registry.onShard(for: key) { shard in
                (
                    group.loops[key % 2].inLoop, shard === registry.shards[key % 2],
                    try shard.result(of: key, as: Int.self)
                )
            }
            #expect(onOwnLoop && isOwnShard)
            #expect(result == key * 10)
        }
        // What the body throws reaches the caller.
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await registry.onShard(for: 1) { _ in throw Refused() } }
        await registry.shutdown()
        try group.syncShutdown()
        // A loop that has shut down cannot run it: a typed error, not a hang.
        await #expect(throws: LoopError.self) { try await registry.onShard(for: 0) { _ in 1 } }
    }
}
