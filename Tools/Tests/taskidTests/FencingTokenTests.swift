import Testing
import UVLoop

@testable import TaskidCluster
@testable import TaskidServer

/// The fencing token a run carries on etcd: its block's claim revision, then its generation;
/// shown by `TASK.INFO`, and sent upstream with `--work upstream:`.
@Suite("taskid serve: fencing tokens and TASK.INFO")
struct FencingTokenTests {
    @Test func tokensCompareByClaimRevisionThenGeneration() {
        let old = FencingToken(claimRevision: 5, generation: 900)
        let newOwner = FencingToken(claimRevision: 6, generation: 1)
        #expect(old < newOwner)
        #expect(newOwner < FencingToken(claimRevision: 6, generation: 2))
        #expect(newOwner.description == "6.1")
    }

    /// The view an etcd node serves when it owns every block under claim revision `revision`.
    static func everyBlockClaimed(at revision: Int64, port: Int) -> ClusterConfiguration {
        let me = ClusterNode(id: "me", host: "127.0.0.1", port: port, slotRanges: [])
        return ClusterConfiguration(
            members: [("me", "127.0.0.1", port)], blockOwners: Array(repeating: "me", count: SlotBlocks.count),
            myself: me, servingUntil: MonotonicClock.nanoseconds() + 600_000_000_000,
            claimRevisions: Array(repeating: revision, count: SlotBlocks.count))
    }

    @Test func taskInfoShowsTheRunItsSlotAndOnEtcdItsToken() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            _ = try await endedPhase(of: "k", client)
            try await client.send("TASK.INFO k\r\nTASK.INFO nothing\r\n")
            let slot = HashSlot.of(Array("k".utf8))
            let block = SlotBlocks.block(ofSlot: slot)
            #expect(
                try await client.replies(2) == [
                    "[\"phase\", \"finished\", \"generation\", :1, \"slot\", :\(slot), \"block\", :\(block), "
                        + "\"claim_revision\", :0, \"fencing_token\", nil]",
                    "[\"phase\", nil, \"generation\", :0, \"slot\", :\(HashSlot.of(Array("nothing".utf8))), "
                        + "\"block\", :\(SlotBlocks.block(ofSlot: HashSlot.of(Array("nothing".utf8)))), "
                        + "\"claim_revision\", :0, \"fencing_token\", nil]",
                ])
            await server.updateCluster(Self.everyBlockClaimed(at: 41, port: server.port), number: 1)
            try await client.send("SET k 2\r\nTASK.INFO k\r\n")
            let replies = try await client.replies(2)
            #expect(replies[1].contains("\"claim_revision\", :41, \"fencing_token\", \"41.2\""))
        }
    }

    /// An upstream that answers every line with `+PONG` and keeps the lines, on its own loop.
    final class RecordingUpstream: Sendable {
        let loop = UVLoop(name: "recording-upstream")
        let port: Int
        let lines: LoopBound<[String]>

        init() async throws {
            try loop.start()
            let loop = loop
            lines = LoopBound([], loop: loop)
            let listener = try await Task(executorPreference: loop) { try loop.listen(host: "127.0.0.1", port: 0) }
                .value
            port = await Task(executorPreference: loop) { listener.localPort }.value
            let lines = lines
            Task(executorPreference: loop) {
                while let connection = try? await listener.accept() {
                    Task(executorPreference: loop) {
                        while let bytes = try? await connection.read() {
                            lines.value.append(String(decoding: bytes.filter { $0 != 13 && $0 != 10 }, as: UTF8.self))
                            try? await connection.write(Array("+PONG\r\n".utf8))
                        }
                        connection.close()
                    }
                }
            }
        }

        func received() async -> [String] { await Task(executorPreference: loop) { self.lines.value }.value }

        func shutdown() throws { try loop.syncShutdown() }
    }

    /// On etcd, an upstream run sends its token: `PING <claim revision>.<generation>`.
    @Test func anUpstreamRunSendsItsFencingToken() async throws {
        let upstream = try await RecordingUpstream()
        try await withServer({ $0.work = .upstream(host: "127.0.0.1", port: upstream.port) }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            #expect(try await endedPhase(of: "k", client) == "+finished")
            await server.updateCluster(Self.everyBlockClaimed(at: 77, port: server.port), number: 1)
            try await client.send("SET k 2\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            #expect(try await endedPhase(of: "k", client) == "+finished")
            #expect(await upstream.received() == ["PING", "PING 77.2"])
        }
        try upstream.shutdown()
    }
}
