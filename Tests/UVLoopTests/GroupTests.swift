import CLibUV
import Testing

@testable import UVLoop

@Suite("UVLoopGroup")
struct GroupTests {
    @Test func eachLoopHasItsOwnThreadAndKeysMapStably() async throws {
        let group = try UVLoopGroup(loops: 3)
        #expect(group.loops.count == 3)
        for loop in group.loops {
            #expect(try await loop.submit { loop.inLoop })
            let others = group.loops.filter { $0 !== loop }
            #expect(try await loop.submit { others.allSatisfy { !$0.inLoop } })
        }
        #expect(group.loop(forHash: 7) === group.loop(forHash: 7))
        #expect(group.loop(forHash: -1) === group.loops[Int(UInt(bitPattern: -1) % 3)])
        let visited = Set((0..<6).map { _ in ObjectIdentifier(group.next()) })
        #expect(visited.count == 3)
        try group.syncShutdown()
        #expect(group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        #expect(throws: LoopError(.libuv(UV_EINVAL.rawValue), operation: "UVLoopGroup.init(loops: 0)")) {
            try UVLoopGroup(loops: 0)
        }
    }

    @Test func shardIndexIsInRangeForEveryHashAndTheGroupUsesIt() async throws {
        #expect(UVLoopGroup.shardIndex(forHash: -1, shardCount: 3) == Int(UInt.max % 3))
        #expect(UVLoopGroup.shardIndex(forHash: Int.min, shardCount: 5) == Int((UInt(Int.max) + 1) % 5))
        #expect(UVLoopGroup.shardIndex(forHash: 12_345, shardCount: 1) == 0)
        for hash in [Int.min, -7, -1, 0, 1, 7, Int.max] {
            #expect((0..<4).contains(UVLoopGroup.shardIndex(forHash: hash, shardCount: 4)))
        }
        let group = try UVLoopGroup(loops: 3)
        for hash in [-5, 0, 1, 2, 99] {
            #expect(group.loop(forHash: hash) === group.loops[UVLoopGroup.shardIndex(forHash: hash, shardCount: 3)])
        }
        try group.syncShutdown()
    }
}
