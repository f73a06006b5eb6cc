import Testing
import UVLoop

@testable import taskid

/// A graceful stop delivers every reply it owes, within its drain time-out.
@Suite("taskid serve: drain on stop")
struct DrainTests {
    /// Polls INFO on `client` until the registry counts `declared` declarations.
    func waitUntilDeclared(_ declared: Int, _ client: TestClient) async throws {
        while true {
            try await client.send("INFO\r\n")
            if try await client.replies(1)[0].contains("declared:\(declared)\r\n") { return }
            await Task.yield()
        }
    }

    @Test func aSlowReaderGetsEveryReplyOwedWhenTheServerStops() async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.work = .sleep(milliseconds: 60_000)
        let server = try RegistryServer(configuration: configuration, logger: .quiet)
        _ = try await server.start()
        let clientLoop = UVLoop(name: "client")
        try clientLoop.start()
        let reader = TestClient(loop: clientLoop, port: server.port)
        let observer = TestClient(loop: clientLoop, port: server.port)
        try await reader.connect()
        try await observer.connect()
        // The reader pipelines its SETs and reads nothing until the stop has begun.
        let count = 200_000
        var requests = ""
        for index in 0..<count { requests += "SET k\(index) v\r\n" }
        try await reader.send(requests)
        try await waitUntilDeclared(count, observer)
        await observer.close()
        let stop = Task { await server.stop(drainTimeout: .seconds(60)) }
        let replies = try await reader.rawBytes(count * 5 + 1)
        #expect(replies.count == count * 5, "every +OK arrives, then the connection closes")
        #expect(replies == Array(String(repeating: "+OK\r\n", count: count).utf8))
        let report = await stop.value
        #expect(report.isComplete)
        #expect(report.droppedBytes == 0)
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        try clientLoop.syncShutdown()
    }

    @Test func aClientThatNeverReadsIsClosedAtTheDrainTimeOutAndTheDropIsReported() async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.maxOutputBytes = 1 << 30
        let server = try RegistryServer(configuration: configuration, logger: .quiet)
        _ = try await server.start()
        let clientLoop = UVLoop(name: "client")
        try clientLoop.start()
        let sink = TestClient(loop: clientLoop, port: server.port)
        try await sink.connect()
        // About 30 MB of INFO replies: more than the kernel's socket buffers hold.
        try await sink.send(String(repeating: "INFO\r\n", count: 20_000))
        let observer = TestClient(loop: clientLoop, port: server.port)
        try await observer.connect()
        while true {
            try await observer.send("INFO\r\n")
            let info = try await observer.replies(1)[0]
            let processed = info.split(separator: "\r\n").first { $0.hasPrefix("total_commands_processed:") }
                .flatMap { Int($0.split(separator: ":")[1]) }
            if let processed, processed >= 20_000 { break }
            await Task.yield()
        }
        await observer.close()
        let report = await server.stop(drainTimeout: .milliseconds(100))
        #expect(report.droppedClients == 1)
        #expect(report.droppedBytes > 0)
        #expect(!report.isComplete)
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        try clientLoop.syncShutdown()
    }
}
