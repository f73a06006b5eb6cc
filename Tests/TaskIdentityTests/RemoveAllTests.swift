import TaskLoopCore
import Testing
import UVLoop

@testable import TaskIdentity

@Suite("removeAll(where:): the slots of a range of keys at once")
struct RemoveAllTests {
    @Test func everyMatchingSlotIsRemovedAndItsTasksCancelled() throws {
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        for key in 0..<1_000 {
            try registry.task(key, id: 1) { _ in try await loop.clock.sleep(for: .seconds(60)) }
            try registry.task(key, name: "second", id: 1) { _ in try await loop.clock.sleep(for: .seconds(60)) }
        }
        loop.run()
        #expect(try registry.removeAll(where: { $0 % 10 == 0 }) == 100)
        loop.run()
        for key in 0..<1_000 {
            #expect(try registry.contains(key) == (key % 10 != 0))
        }
        #expect(try registry.phase(of: 10) == nil, "gone with its slot")
        #expect(try registry.counters.liveSlots == 900)
        #expect(try registry.removeAll(where: { _ in false }) == 0)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    @Test func offTheLoopItIsRefusedAndOnAShardedRegistryEveryShardRemoves() async throws {
        let loops = [UVLoop(name: "a"), UVLoop(name: "b")]
        for loop in loops { try loop.start() }
        let registry = ShardedTaskRegistry<Int>(loops: loops)
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.shards[0].removeAll(where: { _ in true }) }
        for key in 0..<200 { try registry.task(key, id: 1) { _ in try await Task.sleep(for: .seconds(60)) } }
        await registry.flush()
        #expect(try await registry.removeAll(where: { $0 < 50 }) == 50)
        #expect(try await registry.countersSnapshot().liveSlots == 150)
        await registry.shutdown()
        for loop in loops { await loop.shutdown() }
    }
}
