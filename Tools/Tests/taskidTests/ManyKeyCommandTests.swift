import Testing
import UVLoop

@testable import TaskidServer

/// `EXISTS` and `DEL` over more keys than one slice (`RegistryServer.keysPerSlice`), on two
/// loops: the keys are grouped by shard a slice at a time, and every key must still be counted
/// once for each time it is named, a repeated key seen in the order it was sent.
@Suite struct ManyKeyCommandTests {
    static let keyCount = RegistryServer.keysPerSlice * 2 + 500

    static func keys(_ range: Range<Int>) -> String {
        range.map { "k\($0)" }.joined(separator: " ")
    }

    /// Sets `k0` … `k(keyCount - 1)`, pipelined, and waits for every answer.
    static func setKeys(_ client: TestClient) async throws {
        try await client.send((0..<keyCount).map { "SET k\($0) v\r\n" }.joined())
        let replies = try await client.replies(keyCount)
        #expect(replies.allSatisfy { $0 == "+OK" })
    }

    @Test(arguments: [false, true])
    func existsAndDelCountEveryKeyNamedAcrossSlicesAndLoops(inTransaction: Bool) async throws {
        try await withServer({ $0.loops = 2 }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await Self.setKeys(client)
            // Every key, three missing ones, and k7 named twice more (Redis counts each naming).
            let exists = "EXISTS \(Self.keys(0..<Self.keyCount)) missing1 k7 missing2 k7 missing3\r\n"
            // k1 named again after its first removal, in a later slice: removed once.
            let del = "DEL \(Self.keys(0..<Self.keyCount)) k1 missing\r\n"
            if inTransaction {
                try await client.send("MULTI\r\n" + exists + del + "EXISTS k1 k\(Self.keyCount - 1)\r\nEXEC\r\n")
                let replies = try await client.replies(5)
                #expect(replies[0] == "+OK" && replies[1...3].allSatisfy { $0 == "+QUEUED" })
                #expect(replies[4] == "[:\(Self.keyCount + 2), :\(Self.keyCount), :0]")
            } else {
                try await client.send(exists + del + "EXISTS k1 k\(Self.keyCount - 1)\r\nDBSIZE\r\n")
                #expect(try await client.replies(4) == [":\(Self.keyCount + 2)", ":\(Self.keyCount)", ":0", ":0"])
            }
            await client.close()
        }
    }
}
