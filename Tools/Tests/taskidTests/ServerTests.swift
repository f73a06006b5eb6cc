import Logging
import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// A minimal RESP client on its own loop, for driving the server in tests.
///
/// Unchecked `Sendable`: `connection` and `received` are touched only in tasks on `loop`.
final class TestClient: @unchecked Sendable {
    let loop: UVLoop
    let host: String
    let port: Int
    var connection: TCPConnection?
    var received: [UInt8] = []
    /// With TLS: the files the client's context is made from at `connect`, and its session.
    let tlsFiles: TestTLSFiles?
    /// A context to share with other clients; made from `tlsFiles` at `connect` when nil.
    let sharedContext: TLSContext?
    var session: TLSConnection?

    init(loop: UVLoop, port: Int, host: String = "127.0.0.1", tls: TestTLSFiles? = nil, context: TLSContext? = nil) {
        self.loop = loop
        self.host = host
        self.port = port
        self.tlsFiles = tls
        self.sharedContext = context
    }

    /// Whether the server ended the TLS session with close_notify.
    var receivedCloseNotify: Bool {
        get async { await Task(executorPreference: loop) { self.session?.receivedCloseNotify == true }.value }
    }

    /// A connection still open is closed on its loop thread (a socket checks that): the last
    /// reference goes to the loop with the closure, which closes it there.
    deinit {
        guard let connection else { return }
        try? loop.execute { connection.close() }
    }

    func connect() async throws {
        try await Task(executorPreference: loop) {
            let connection = try await self.loop.connect(host: self.host, port: self.port)
            self.connection = connection
            if let files = self.tlsFiles {
                let context =
                    try self.sharedContext
                    ?? TLSContext.client(caFile: files.ca, certificateFile: files.certificate, keyFile: files.key)
                self.session = try TLSConnection(connection, tls: context, loop: self.loop, serverName: "localhost")
            }
        }.value
    }

    /// The next bytes from the server (decrypted with TLS); nil at the end. Loop only.
    private func readChunk() async throws -> [UInt8]? {
        if let session { return try await session.read { Array($0) } }
        return try await connection!.read()
    }

    /// Sends raw bytes.
    func send(_ text: String) async throws {
        try await send(bytes: Array(text.utf8))
    }

    /// Sends raw bytes.
    func send(bytes: [UInt8]) async throws {
        try await Task(executorPreference: loop) {
            if let session = self.session {
                try await session.write(bytes)
            } else {
                try await self.connection!.write(bytes)
            }
        }.value
    }

    /// Sends one request as an array of bulk strings (any bytes).
    func send(command arguments: [UInt8]...) async throws {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10]
        }
        try await send(bytes: bytes)
    }

    /// Reads until `count` raw bytes are buffered; returns them (byte-exact checks).
    func rawBytes(_ count: Int) async throws -> [UInt8] {
        try await Task(executorPreference: loop) { () throws -> [UInt8] in
            while self.received.count < count {
                guard let chunk = try await self.readChunk() else { break }
                self.received.append(contentsOf: chunk)
            }
            let taken = Array(self.received.prefix(count))
            self.received.removeFirst(taken.count)
            return taken
        }.value
    }

    /// Reads until `count` complete replies are buffered (or the server closes); returns them.
    func replies(_ count: Int) async throws -> [String] {
        try await Task(executorPreference: loop) { () throws -> [String] in
            var parsed: [String] = []
            while true {
                parsed = []
                var index = 0
                while parsed.count < count, let (reply, next) = Self.parseReply(self.received, from: index) {
                    parsed.append(reply)
                    index = next
                }
                if parsed.count == count {
                    self.received.removeFirst(index)
                    return parsed
                }
                guard let chunk = try await self.readChunk() else { return parsed + ["<closed>"] }
                self.received.append(contentsOf: chunk)
            }
        }.value
    }

    /// Whether the server has closed the connection (reads end of stream).
    func isClosedByServer() async throws -> Bool {
        try await Task(executorPreference: loop) { () throws -> Bool in
            while let chunk = try await self.readChunk() { self.received.append(contentsOf: chunk) }
            return true
        }.value
    }

    func close() async {
        await Task(executorPreference: loop) {
            if let session = self.session { await session.close() } else { self.connection?.close() }
        }.value
    }

    /// One reply rendered as text: `+OK`, `-ERR …`, `:3`, `"bulk"`, `nil`, `[a, b]`.
    static func parseReply(_ bytes: [UInt8], from start: Int) -> (String, Int)? {
        guard start < bytes.count else { return nil }
        var end = start
        while end + 1 < bytes.count && !(bytes[end] == 13 && bytes[end + 1] == 10) { end += 1 }
        guard end + 1 < bytes.count else { return nil }
        let line = String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
        let next = end + 2
        switch bytes[start] {
        case UInt8(ascii: "+"): return ("+" + line, next)
        case UInt8(ascii: "-"): return ("-" + line, next)
        case UInt8(ascii: ":"): return (":" + line, next)
        case UInt8(ascii: "$"):
            guard let length = Int(line) else { return nil }
            if length < 0 { return ("nil", next) }
            guard next + length + 2 <= bytes.count else { return nil }
            return ("\"" + String(decoding: bytes[next..<(next + length)], as: UTF8.self) + "\"", next + length + 2)
        case UInt8(ascii: "_"): return ("nil", next)
        case UInt8(ascii: "="):  // RESP3 verbatim string: shown as its text after the format
            guard let length = Int(line), next + length + 2 <= bytes.count else { return nil }
            return ("=" + String(decoding: bytes[(next + 4)..<(next + length)], as: UTF8.self), next + length + 2)
        case UInt8(ascii: "%"):  // RESP3 map: {key: value, …}
            guard let count = Int(line) else { return nil }
            var pairs: [String] = []
            var index = next
            for _ in 0..<max(count, 0) {
                guard let (key, afterKey) = parseReply(bytes, from: index),
                    let (value, afterValue) = parseReply(bytes, from: afterKey)
                else { return nil }
                pairs.append("\(key): \(value)")
                index = afterValue
            }
            return ("{" + pairs.joined(separator: ", ") + "}", index)
        case UInt8(ascii: "*"):
            guard let count = Int(line) else { return nil }
            var items: [String] = []
            var index = next
            for _ in 0..<max(count, 0) {
                guard let (item, after) = parseReply(bytes, from: index) else { return nil }
                items.append(item)
                index = after
            }
            return ("[" + items.joined(separator: ", ") + "]", index)
        default: return nil
        }
    }
}

extension Logger {
    /// A logger that drops everything, for servers started inside the test process.
    static let quiet = Logger(label: "taskid-tests") { _ in SwiftLogNoOpLogHandler() }
}

/// A server on an ephemeral loopback port and a client loop; always shut down cleanly.
/// Polls TASK.PHASE until the key's latest run has ended (no fixed wait); returns the phase.
func endedPhase(of key: String, _ client: TestClient) async throws -> String {
    while true {
        try await client.send("TASK.PHASE \(key)\r\n")
        let phase = try await client.replies(1)[0]
        if phase.hasPrefix("+finished") || phase.hasPrefix("+failed") || phase.hasPrefix("+cancelled") {
            return phase
        }
        await Task.yield()
    }
}

func withServer(
    _ configure: (inout ServerConfiguration) -> Void = { _ in },
    _ body: (RegistryServer, UVLoop) async throws -> Void
) async throws {
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.work = .sleep(milliseconds: 2)
    configure(&configuration)
    let server = try RegistryServer(configuration: configuration, logger: .quiet)
    _ = try await server.start()
    let clientLoop = UVLoop(name: "client")
    try clientLoop.start()
    do { try await body(server, clientLoop) } catch {
        await server.stop()
        try clientLoop.syncShutdown()
        throw error
    }
    await server.stop()
    try clientLoop.syncShutdown()
    #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
    #expect(clientLoop.loopCloseResult == 0)
}

/// Waits until no registry action is running or waiting (polling INFO, no fixed sleep).
func waitUntilSettled(_ client: TestClient) async throws {
    while true {
        try await client.send("INFO\r\n")
        let info = try await client.replies(1)[0]
        if info.contains("running_actions:0") && info.contains("live_generations:0") { return }
        await Task.yield()
    }
}

@Suite("taskid serve")
struct ServerTests {
    @Test func everyCommand() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("PING\r\nPING hello\r\nECHO hi\r\nSET user:1 alpha\r\nTASK.PHASE user:1\r\n")
            let first = try await client.replies(5)
            #expect(first[0...3] == ["+PONG", "\"hello\"", "\"hi\"", "+OK"])
            #expect(["+waiting", "+running"].contains(first[4]))
            try await waitUntilSettled(client)
            try await client.send(
                "GET user:1\r\nTASK.PHASE user:1\r\nEXISTS user:1 nope\r\nDBSIZE\r\nSET user:1 beta\r\nSET user:2 x\r\n"
            )
            #expect(try await client.replies(6) == ["[\"alpha\", \"1\"]", "+finished", ":1", ":1", "+OK", "+OK"])
            try await waitUntilSettled(client)
            try await client.send(
                "GET user:1\r\nGET missing\r\nDEL user:1 missing\r\nEXISTS user:1\r\nDBSIZE\r\nINFO\r\n")
            let replies = try await client.replies(6)
            #expect(replies[0...4] == ["[\"beta\", \"2\"]", "nil", ":1", ":0", ":1"])
            #expect(replies[5].contains("declared:3") && replies[5].contains("finished:3"))
            try await client.send("COMMAND DOCS\r\nCONFIG GET save\r\nCLIENT SETNAME x\r\nSELECT 0\r\nQUIT\r\n")
            #expect(try await client.replies(5) == ["[]", "[\"save\", \"\"]", "+OK", "+OK", "+OK"])
            #expect(try await client.isClosedByServer())
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            var batch = ""
            for index in 0..<200 {
                batch += "*3\r\n$3\r\nSET\r\n$2\r\nk\(index % 10)\r\n$\(String(index).count)\r\n\(index)\r\n"
            }
            for index in 0..<10 { batch += "ECHO \(index)\r\n" }
            try await client.send(batch)
            let replies = try await client.replies(210)
            try #require(replies.count == 210, "\(replies.prefix(3))")
            #expect(replies[..<200].allSatisfy { $0 == "+OK" })
            #expect(Array(replies[200...]) == (0..<10).map { "\"\($0)\"" })
            try await waitUntilSettled(client)
            try await client.send("GET k3\r\n")
            #expect(try await client.replies(1) == ["[\"193\", \"20\"]"], "the last SET of k3 won, its 20th identity")
        }
    }

    @Test func badInputGetsAnErrorAndOtherClientsGoOn() async throws {
        try await withServer({ $0.requestLimits.maxQueryBufferBytes = 1024 }) { server, clientLoop in
            let bystander = TestClient(loop: clientLoop, port: server.port)
            try await bystander.connect()

            let unknown = TestClient(loop: clientLoop, port: server.port)
            try await unknown.connect()
            try await unknown.send("FLY me to\r\nSET onlykey\r\nPING\r\n")
            #expect(
                try await unknown.replies(3) == [
                    "-ERR unknown command 'FLY', with args beginning with: 'me' 'to' ",
                    "-ERR wrong number of arguments for 'set' command", "+PONG",
                ])

            let malformed = TestClient(loop: clientLoop, port: server.port)
            try await malformed.connect()
            try await malformed.send("*1\r\n+PING\r\n")
            #expect(try await malformed.replies(1) == ["-ERR Protocol error: expected '$', got '+'"])
            #expect(try await malformed.isClosedByServer())

            let oversized = TestClient(loop: clientLoop, port: server.port)
            try await oversized.connect()
            try await oversized.send("*2\r\n$3\r\nSET\r\n$100000\r\n")
            #expect(
                try await oversized.replies(1) == [
                    "-ERR Protocol error: request larger than the client query buffer limit (1024 bytes)"
                ])
            #expect(try await oversized.isClosedByServer())

            try await bystander.send("PING\r\n")
            #expect(try await bystander.replies(1) == ["+PONG"])
        }
    }

    @Test func clientsPastTheLimitAreRefused() async throws {
        try await withServer({ $0.maxClients = 2 }) { server, clientLoop in
            let clients = (0..<3).map { _ in TestClient(loop: clientLoop, port: server.port) }
            for client in clients[..<2] {
                try await client.connect()
                try await client.send("PING\r\n")
                #expect(try await client.replies(1) == ["+PONG"])
            }
            try await clients[2].connect()
            #expect(try await clients[2].replies(1) == ["-ERR max number of clients reached"])
            #expect(try await clients[2].isClosedByServer())
            await clients[0].close()
            // A place frees up once the server has seen the close.
            var answer = [String]()
            repeat {
                let retry = TestClient(loop: clientLoop, port: server.port)
                try await retry.connect()
                try await retry.send("PING\r\n")
                answer = try await retry.replies(1)
                await retry.close()
            } while answer != ["+PONG"]
            try await clients[1].send("PING\r\n")
            #expect(try await clients[1].replies(1) == ["+PONG"])
        }
    }

    /// The output limits punish a client that does not read, not a large reply: one far past
    /// the soft limit arrives whole at a client that reads it, and the idle connection then
    /// keeps neither its request's nor its reply's buffer.
    @Test func aClientThatReadsGetsAReplyFarPastTheSoftLimit() async throws {
        let limit = OutputBufferLimit(hardBytes: 0, softBytes: 64 * 1024, softSeconds: 60)
        try await withServer({ $0.outputBufferLimit = limit }) { server, clientLoop in
            let reader = TestClient(loop: clientLoop, port: server.port)
            try await reader.connect()
            let value = [UInt8](repeating: UInt8(ascii: "v"), count: 4 << 20)
            try await reader.send(command: Array("ECHO".utf8), value)
            let reply = try await reader.rawBytes(value.count + 12)
            #expect(reply.count == value.count + 12 && reply.prefix(10) == ArraySlice("$4194304\r\n".utf8))
            #expect(reply.dropFirst(10).prefix(value.count).allSatisfy { $0 == UInt8(ascii: "v") })
            try await reader.send("PING\r\n")
            #expect(try await reader.replies(1) == ["+PONG"])
        }
    }

    /// A client that never reads, under the output limit `limit` (the hard one, then the soft
    /// one for its seconds, here 0: at once), is disconnected; another client goes on.
    @Test(arguments: [
        OutputBufferLimit(hardBytes: 64 * 1024, softBytes: 0, softSeconds: 0),
        OutputBufferLimit(hardBytes: 0, softBytes: 64 * 1024, softSeconds: 0),
    ])
    func aClientThatStopsReadingIsDisconnected(limit: OutputBufferLimit) async throws {
        try await withServer({ $0.outputBufferLimit = limit }) { server, clientLoop in
            let greedy = TestClient(loop: clientLoop, port: server.port)
            try await greedy.connect()
            // Ask for megabytes of replies and never read them.
            let request = String(repeating: "ECHO \(String(repeating: "x", count: 900))\r\n", count: 200)
            var disconnected = false
            for _ in 0..<200 where !disconnected {
                do { try await greedy.send(request) } catch { disconnected = true }
            }
            #expect(disconnected, "the server closed the connection of a client that does not read")
            let other = TestClient(loop: clientLoop, port: server.port)
            try await other.connect()
            try await other.send("PING\r\n")
            #expect(try await other.replies(1) == ["+PONG"])
        }
    }

    @Test func gracefulShutdownClosesClientsAndCancelsWork() async throws {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.work = .sleep(milliseconds: 60_000)
        let server = try RegistryServer(configuration: configuration, logger: .quiet)
        _ = try await server.start()
        let clientLoop = UVLoop(name: "client")
        try clientLoop.start()
        let client = TestClient(loop: clientLoop, port: server.port)
        try await client.connect()
        try await client.send("SET a 1\r\nSET b 2\r\n")
        #expect(try await client.replies(2) == ["+OK", "+OK"])
        await server.stop()
        #expect(try await client.isClosedByServer())
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        try clientLoop.syncShutdown()
    }

    @Test func keysGoToTheShardOfTheLoopGroupsHashMapping() async throws {
        var configuration = ServerConfiguration()
        configuration.loops = 3
        let server = try RegistryServer(configuration: configuration, logger: .quiet)
        for name in ["a", "b", "user:1", "user:2", "x"] {
            let key = ServerKey(name)
            #expect(server.registry.shard(for: key).loop === server.group.loop(forHash: key.hashValue))
        }
        await server.stop()
    }

    @Test func workArgumentsParseOrAreRefused() {
        #expect(ServerWork(argument: "sleep:10") == .sleep(milliseconds: 10))
        #expect(ServerWork(argument: "task-sleep:0") == .taskSleep(milliseconds: 0))
        #expect(ServerWork(argument: "upstream:::1:6379") == .upstream(host: "::1", port: 6379))
        for bad in ["sleep", "sleep:-1", "task-sleep:x", "upstream:host", "upstream:host:0", "nap:5", ""] {
            #expect(ServerWork(argument: bad) == nil, "\(bad)")
        }
    }

    @Test func swiftTaskWorkRestartsAndCommitsLikeSynchronousWork() async throws {
        try await withServer({ $0.work = .taskSleep(milliseconds: 2) }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k 1\r\nSET k 2\r\nSET j 7\r\n")
            #expect(try await client.replies(3) == ["+OK", "+OK", "+OK"])
            try await waitUntilSettled(client)
            try await client.send("GET k\r\nGET j\r\nINFO\r\n")
            let replies = try await client.replies(3)
            #expect(replies[0] == "[\"2\", \"2\"]")
            #expect(replies[1] == "[\"7\", \"1\"]")
            #expect(replies[2].contains("work:task-sleep:2"))
        }
    }

    @Test func upstreamWorkIsARealRequestAndCancellationClosesIt() async throws {
        // The upstream is another server instance; each SET's work PINGs it.
        try await withServer { upstream, clientLoop in
            try await withServer({ $0.work = .upstream(host: "127.0.0.1", port: upstream.port) }) { server, _ in
                let client = TestClient(loop: clientLoop, port: server.port)
                try await client.connect()
                try await client.send("SET k 1\r\nSET k 2\r\n")
                #expect(try await client.replies(2) == ["+OK", "+OK"])
                try await waitUntilSettled(client)
                try await client.send("GET k\r\n")
                #expect(try await client.replies(1) == ["[\"2\", \"2\"]"])
            }
        }
    }
}
