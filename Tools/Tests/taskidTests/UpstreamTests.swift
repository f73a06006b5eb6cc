import Testing
import UVLoop

@testable import taskid

/// `--work upstream:` runs end `failed` with a typed error past their time-outs or the cap.
@Suite("taskid serve: upstream time-outs and cap")
struct UpstreamTests {
    /// An upstream that accepts connections and never answers, on its own loop.
    final class SilentUpstream: Sendable {
        let loop = UVLoop(name: "silent-upstream")
        let port: Int
        private let held: LoopBound<[TCPConnection]>

        init() async throws {
            try loop.start()
            let loop = loop
            held = LoopBound([], loop: loop)
            let listener = try await Task(executorPreference: loop) { try loop.listen(host: "127.0.0.1", port: 0) }
                .value
            port = await Task(executorPreference: loop) { listener.localPort }.value
            let held = held
            Task(executorPreference: loop) {
                while let connection = try? await listener.accept() { held.value.append(connection) }
            }
        }

        func shutdown() throws { try loop.syncShutdown() }
    }

    @Test func aSilentUpstreamFailsTheRunAtTheReplyTimeOut() async throws {
        let upstream = try await SilentUpstream()
        try await withServer({
            $0.work = .upstream(host: "127.0.0.1", port: upstream.port)
            $0.upstreamReplyTimeoutMilliseconds = 50
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            #expect(try await endedPhase(of: "k", client) == "+failed(upstream reply timed out after 50 ms)")
            #expect(server.upstreamLimits.openCount == 0, "the connection was closed and its slot given back")
        }
        try upstream.shutdown()
    }

    @Test func runsPastTheConnectionCapFailWithoutOpeningOne() async throws {
        let upstream = try await SilentUpstream()
        try await withServer({
            $0.work = .upstream(host: "127.0.0.1", port: upstream.port)
            $0.upstreamMaxConnections = 2
            $0.upstreamReplyTimeoutMilliseconds = 600_000
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET a 1\r\nSET b 1\r\n")
            #expect(try await client.replies(2) == ["+OK", "+OK"])
            while server.upstreamLimits.openCount < 2 { await Task.yield() }
            try await client.send("SET c 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            #expect(try await endedPhase(of: "c", client) == "+failed(upstream connections at their cap (2))")
            try await client.send("TASK.PHASE a\r\n")
            #expect(try await client.replies(1) == ["+running"])
        }
        try upstream.shutdown()
    }

    @Test func aConnectThatDoesNotCompleteFailsAtTheConnectTimeOut() async throws {
        // A listener with a backlog of 0 that never accepts: once its queue is full, the
        // kernel drops further connection attempts, so a connect hangs.
        let loop = UVLoop(name: "full-backlog")
        try loop.start()
        let listener = try await Task(executorPreference: loop) {
            try loop.listen(host: "127.0.0.1", port: 0, backlog: 0)
        }.value
        let port = await Task(executorPreference: loop) { listener.localPort }.value
        try await withServer({
            $0.work = .upstream(host: "127.0.0.1", port: port)
            $0.upstreamConnectTimeoutMilliseconds = 50
            $0.upstreamReplyTimeoutMilliseconds = 50
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            // Fill the backlog; then a run must time out connecting.
            var phases: [String] = []
            for index in 0..<8 {
                try await client.send("SET k\(index) 1\r\n")
                _ = try await client.replies(1)
                phases.append(try await endedPhase(of: "k\(index)", client))
            }
            #expect(phases.contains("+failed(upstream connect timed out after 50 ms)"), "\(phases)")
        }
        await Task(executorPreference: loop) { listener.close() }.value
        try loop.syncShutdown()
    }
}
