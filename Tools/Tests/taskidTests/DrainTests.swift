import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// A graceful stop delivers every reply it owes, within its drain time-out.
@Suite("taskid serve: drain on stop")
struct DrainTests {
    /// A started server (stopped by the test itself, which is what it checks) and a client loop.
    func startedServer(
        _ configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> (RegistryServer, UVLoop) {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configure(&configuration)
        let server = try RegistryServer(configuration: configuration, logger: .quiet)
        _ = try await server.start()
        let clientLoop = UVLoop(name: "client")
        try clientLoop.start()
        return (server, clientLoop)
    }

    /// Polls INFO on `client` until the registry counts `declared` declarations (or more, with
    /// `orMore`).
    func waitUntilDeclared(_ declared: Int, orMore: Bool = false, _ client: TestClient) async throws {
        while true {
            try await client.send("INFO\r\n")
            let info = try await client.replies(1)[0]
            if info.contains("declared:\(declared)\r\n") { return }
            if orMore,
                let line = info.split(separator: "\r\n").first(where: { $0.hasPrefix("declared:") }),
                let count = Int(line.dropFirst("declared:".count)), count >= declared
            {
                return
            }
            await Task.yield()
        }
    }

    @Test func aSlowReaderGetsEveryReplyOwedWhenTheServerStops() async throws {
        let (server, clientLoop) = try await startedServer {
            $0.work = .sleep(milliseconds: 60_000)
        }
        let reader = TestClient(loop: clientLoop, port: server.port)
        let observer = TestClient(loop: clientLoop, port: server.port)
        try await reader.connect()
        try await observer.connect()
        // The reader pipelines its SETs and reads nothing until the stop has begun.
        let count = 100_000
        var requests = ""
        for index in 0..<count {
            let key = "k\(index)"
            requests += "*3\r\n$3\r\nSET\r\n$\(key.utf8.count)\r\n\(key)\r\n$1\r\nv\r\n"
        }
        try await reader.send(requests)
        try await waitUntilDeclared(count, observer)
        await observer.close()
        let stop = Task { await server.stop(drainTimeout: .seconds(60)) }
        let replies = try await reader.rawBytes(count * 5 + 1)
        #expect(replies.count == count * 5, "every +OK arrives, then the connection closes")
        #expect(replies == Array(String(repeating: "+OK\r\n", count: count).utf8))
        await reader.close()  // as a client does once it reads the end of the stream
        let report = await stop.value
        #expect(report.isComplete)
        #expect(report.droppedBytes == 0)
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        try clientLoop.syncShutdown()
    }

    @Test func aClientStillSendingWhenTheStopBeginsGetsItsRepliesAndAnOrderlyEnd() async throws {
        // Its later requests stay unread; closing then would reset the connection and could
        // destroy replies in flight. The server sends FIN instead and waits for the client.
        let (server, clientLoop) = try await startedServer {
            $0.work = .sleep(milliseconds: 60_000)
        }
        let sender = TestClient(loop: clientLoop, port: server.port)
        let observer = TestClient(loop: clientLoop, port: server.port)
        try await sender.connect()
        try await observer.connect()
        func batch(_ number: Int) -> String {
            (0..<10_000).map { "SET k\(number)-\($0) v\r\n" }.joined()
        }
        try await sender.send(batch(0))
        try await waitUntilDeclared(10_000, observer)
        // Built first and written in one go, already flowing when the stop begins: the server
        // discards for as long as bytes keep coming, and closes a peer quiet for its quiet
        // period (100 ms). A client pausing between writes (building the next batch on a
        // loaded machine) would be that peer.
        let later = (1..<20).map(batch).joined()
        async let sent: Void = sender.send(later)
        try await waitUntilDeclared(10_001, orMore: true, observer)
        await observer.close()
        let stop = Task { await server.stop(drainTimeout: .seconds(60)) }
        try await sent
        // Every reply, then the end of the stream: no reset (that would throw here).
        let replies = try await sender.rawBytes(Int.max)
        #expect(replies.count >= 10_000 * 5)
        #expect(replies.count % 5 == 0)
        #expect(replies == Array(String(repeating: "+OK\r\n", count: replies.count / 5).utf8))
        await sender.close()
        let report = await stop.value
        #expect(report.isComplete)
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        try clientLoop.syncShutdown()
    }

    @Test func anIdleClientDoesNotHoldTheStopUp() async throws {
        // Nothing owed and nothing unread: closed at once, not at the drain time-out.
        let (server, clientLoop) = try await startedServer()
        let idle = TestClient(loop: clientLoop, port: server.port)
        try await idle.connect()
        try await idle.send("PING\r\n")
        #expect(try await idle.replies(1) == ["+PONG"])
        let report = await server.stop(drainTimeout: .seconds(600))
        #expect(report == DrainReport(clients: 1))
        #expect(try await idle.isClosedByServer())
        try clientLoop.syncShutdown()
    }

    @Test func aClientThatNeverReadsIsClosedAtTheDrainTimeOutAndTheDropIsReported() async throws {
        let (server, clientLoop) = try await startedServer {
            $0.outputBufferLimit.hardBytes = 1 << 30
        }
        let sink = TestClient(loop: clientLoop, port: server.port)
        try await sink.connect()
        // About 30 MB of INFO replies: more than the kernel's socket buffers hold.
        try await sink.send(String(repeating: "INFO\r\n", count: 20_000))
        try await waitUntilCommandsProcessed(20_000, server: server, clientLoop: clientLoop)
        let report = await server.stop(drainTimeout: .milliseconds(100))
        #expect(report.droppedClients == 1)
        #expect(report.droppedBytes > 0)
        #expect(!report.isComplete)
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        try clientLoop.syncShutdown()
    }
}

/// Waits until the server has run `count` commands besides the INFOs this asks with, seen
/// through INFO's `total_commands_processed` on a connection of its own (plain TCP).
func waitUntilCommandsProcessed(_ count: Int, server: RegistryServer, clientLoop: UVLoop) async throws {
    let observer = TestClient(loop: clientLoop, port: server.port)
    try await observer.connect()
    var infosSent = 0
    while true {
        try await observer.send("INFO\r\n")
        infosSent += 1
        let info = try await observer.replies(1)[0]
        let processed = info.split(separator: "\r\n").first { $0.hasPrefix("total_commands_processed:") }
            .flatMap { Int($0.split(separator: ":")[1]) }
        // The INFO that answers is not counted in its own figure yet.
        if let processed, processed >= count + infosSent - 1 { break }
        await Task.yield()
    }
    await observer.close()
}
