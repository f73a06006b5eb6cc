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
        #expect(throws: LoopError.self) { try UVLoopGroup(loops: 0) }
    }
}
