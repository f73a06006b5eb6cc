import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// The test certificates' files (Tools/Tests/Fixtures/tls, made by its `regenerate`): what a
/// `TestClient` trusts and shows. A value type; any thread.
struct TestTLSFiles: Sendable {
    static let directory: String = {
        let file = "\(#filePath)"
        let tests = file[..<file.range(of: "/taskidTests/")!.lowerBound]
        return "\(tests)/Fixtures/tls"
    }()

    static func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// The CA the client trusts.
    var ca = Self.path("ca.crt")
    /// The certificate the client shows, and its key; nil for none.
    var certificate: String?
    var key: String?

    /// A client showing the certificate `name` (`client`: the test CA's; `stranger`: another CA's).
    static func showing(_ name: String) -> TestTLSFiles {
        TestTLSFiles(certificate: path("\(name).crt"), key: path("\(name).key"))
    }

    /// The server's settings: its certificate, with `ca` to verify clients.
    static func server(
        ca: String? = nil, authentication: TLSClientAuthentication = .no, only: Bool = false
    ) -> TLSSettings {
        TLSSettings(
            port: 0, certificateFile: path("server.crt"), keyFile: path("server.key"), caCertificateFile: ca,
            clientAuthentication: authentication, only: only)
    }
}

/// `taskid serve --tls-port`: RESP over TLS through OpenSSL on the front loop, its options, and
/// what it refuses.
@Suite("taskid serve: TLS")
struct TLSTests {
    @Test func commandsOverTLSAreServedBesideThePlainPort() async throws {
        try await withServer({ $0.tls = TestTLSFiles.server() }) { server, clientLoop in
            #expect(server.tlsPort != 0 && server.tlsPort != server.port)
            let client = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
            try await client.connect()
            try await client.send("PING\r\nSET k v1\r\nECHO hello\r\n")
            #expect(try await client.replies(3) == ["+PONG", "+OK", "\"hello\""])
            // Larger than what is encrypted at once, both ways: the rest is encrypted as the
            // socket takes what is queued, in order.
            let large = (0..<(5 * TLSConnection.encryptAhead / 2 + 12_345)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            try await client.send(command: Array("ECHO".utf8), large)
            let header = Array("$\(large.count)\r\n".utf8)
            #expect(try await client.rawBytes(header.count + large.count + 2) == header + large + [13, 10])
            let plain = TestClient(loop: clientLoop, port: server.port)
            try await plain.connect()
            try await plain.send("PING\r\n")
            #expect(try await plain.replies(1) == ["+PONG"])
        }
    }

    @Test func aPlainTextClientOnTheTLSPortIsClosedUnanswered() async throws {
        try await withServer({ $0.tls = TestTLSFiles.server() }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.tlsPort)
            try await client.connect()
            try await client.send("PING\r\n")
            #expect(try await client.isClosedByServer())
            #expect(!String(decoding: client.received, as: UTF8.self).contains("PONG"))
        }
    }

    @Test func aServerCertificateFromAnotherCAIsRefusedByTheClient() async throws {
        try await withServer({ $0.tls = TestTLSFiles.server() }) { server, clientLoop in
            let client = TestClient(
                loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles(ca: TestTLSFiles.path("other-ca.crt")))
            try await client.connect()
            await #expect(throws: TLSSessionError.self) { try await client.send("PING\r\n") }
        }
    }

    @Test func clientCertificatesRequiredAreChecked() async throws {
        let ca = TestTLSFiles.path("ca.crt")
        try await withServer({ $0.tls = TestTLSFiles.server(ca: ca, authentication: .yes) }) { server, clientLoop in
            let shown = TestClient(loop: clientLoop, port: server.tlsPort, tls: .showing("client"))
            try await shown.connect()
            try await shown.send("PING\r\n")
            #expect(try await shown.replies(1) == ["+PONG"])
            for files in [TestTLSFiles(), .showing("stranger")] {
                let refused = TestClient(loop: clientLoop, port: server.tlsPort, tls: files)
                try await refused.connect()
                // TLS 1.3: the client's handshake ends before the server checks its certificate,
                // so the refusal (an alert) arrives on the first read.
                try? await refused.send("PING\r\n")
                await #expect(throws: TLSSessionError.self) { _ = try await refused.replies(1) }
            }
        }
    }

    @Test func optionalClientCertificatesMayBeLeftOutButNotForged() async throws {
        let ca = TestTLSFiles.path("ca.crt")
        try await withServer({ $0.tls = TestTLSFiles.server(ca: ca, authentication: .optional) }) {
            server, clientLoop in
            let without = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
            try await without.connect()
            try await without.send("PING\r\n")
            #expect(try await without.replies(1) == ["+PONG"])
            let stranger = TestClient(loop: clientLoop, port: server.tlsPort, tls: .showing("stranger"))
            try await stranger.connect()
            try? await stranger.send("PING\r\n")
            await #expect(throws: TLSSessionError.self) { _ = try await stranger.replies(1) }
        }
    }

    /// Past --max-clients a TLS client is answered too: after the handshake, encrypted.
    @Test func aRefusedTLSClientIsAnsweredAfterTheHandshake() async throws {
        try await withServer({
            $0.tls = TestTLSFiles.server()
            $0.maxClients = 1
            // Limits far past any handshake: this test checks the answer, not the limits (a
            // debug build's handshake on a loaded machine can take longer than the defaults).
            $0.refusalHandshakeTimeLimit = .seconds(600)
            $0.refusalAnswerTimeLimit = .seconds(600)
        }) { server, clientLoop in
            let first = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
            try await first.connect()
            try await first.send("PING\r\n")
            #expect(try await first.replies(1) == ["+PONG"])
            let second = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
            try await second.connect()
            try? await second.send("PING\r\n")
            #expect(try await second.replies(1) == ["-ERR max number of clients reached"])
            #expect(try await second.isClosedByServer())
        }
    }

    /// A refused client that never starts its handshake holds its place among the refusals
    /// only until the handshake's time limit.
    @Test(.timeLimit(.minutes(1))) func aRefusedClientSilentOnTheTLSPortIsClosedAtTheHandshakeLimit() async throws {
        try await withServer({
            $0.tls = TestTLSFiles.server()
            $0.maxClients = 1
            $0.refusalHandshakeTimeLimit = .milliseconds(50)
        }) { server, clientLoop in
            let first = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
            try await first.connect()
            try await first.send("PING\r\n")
            #expect(try await first.replies(1) == ["+PONG"])
            let silent = TestClient(loop: clientLoop, port: server.tlsPort)
            try await silent.connect()
            #expect(try await silent.isClosedByServer())
            #expect(silent.received.isEmpty)
        }
    }

    @Test func tlsOnlyBindsNoPlainPort() async throws {
        try await withServer({ $0.tls = TestTLSFiles.server(only: true) }) { server, clientLoop in
            #expect(server.port == server.tlsPort)
            let client = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
            try await client.connect()
            try await client.send("SET k 1\r\nPING\r\nINFO\r\n")
            let replies = try await client.replies(3)
            #expect(Array(replies.prefix(2)) == ["+OK", "+PONG"])
            #expect(
                replies[2].contains("tcp_port:\(server.tlsPort)") && replies[2].contains("tls_port:\(server.tlsPort)"))
        }
    }

    /// A server with a TLS port, and a client loop, for a test that stops the server itself
    /// (`withServer` stops it at the end).
    static func startServerToStop() async throws -> (RegistryServer, UVLoop) {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.tls = TestTLSFiles.server()
        let server = try RegistryServer(configuration: configuration, logger: .quiet)
        _ = try await server.start()
        let clientLoop = UVLoop(name: "client")
        try clientLoop.start()
        return (server, clientLoop)
    }

    /// A stop delivers what a TLS client is owed, then its close_notify: the client reads the
    /// end of the stream, not an error.
    @Test func aGracefulStopEndsTheSessionCleanly() async throws {
        let (server, clientLoop) = try await Self.startServerToStop()
        let client = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
        try await client.connect()
        try await client.send("PING\r\n")
        #expect(try await client.replies(1) == ["+PONG"])
        async let report = server.stop()
        #expect(try await client.isClosedByServer())
        #expect(await client.receivedCloseNotify, "the end of the session, not just of the connection")
        #expect(await report.isComplete)
        await client.close()
        try clientLoop.syncShutdown()
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
    }

    /// A TLS client that never reads, owed more replies than the socket and one encryption
    /// slice hold, is closed at the drain's time-out: the stop cancels the encryption that waits
    /// for its socket, and returns (it waited for ever before), the client reported dropped.
    @Test(.timeLimit(.minutes(1))) func aTLSClientThatNeverReadsIsClosedAtTheDrainTimeOut() async throws {
        let (server, clientLoop) = try await Self.startServerToStop()
        let sink = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
        try await sink.connect()
        // Up to 32 MiB of replies (as arrays: an inline command is held to 64 KiB).
        let echo = "*2\r\n$4\r\nECHO\r\n$\(1 << 20)\r\n\(String(repeating: "x", count: 1 << 20))\r\n"
        try await sink.send(String(repeating: echo, count: 32))
        // 20 MiB of replies made: more than the kernel's buffers on both sides and one
        // encryption slice. (The server may stop short of 32: the test's own client stops
        // sending once its socket's buffers are full.)
        try await waitUntilCommandsProcessed(20, server: server, clientLoop: clientLoop)
        let report = await server.stop(drainTimeout: .milliseconds(100))
        #expect(report.droppedClients == 1 && !report.isComplete)
        #expect(server.group.loops.allSatisfy { $0.loopCloseResult == 0 && $0.liveHandleCount == 0 })
        await sink.close()
        try clientLoop.syncShutdown()
    }

    /// A client still in its handshake when the stop comes gets no close_notify (there is no
    /// session to close), and leaves nothing behind that fails another client's session: the
    /// client that finished its handshake still gets every reply owed.
    @Test func aStopWithAClientMidHandshakeFailsNoOtherSession() async throws {
        let (server, clientLoop) = try await Self.startServerToStop()
        let waiting = TestClient(loop: clientLoop, port: server.tlsPort)
        try await waiting.connect()
        let served = TestClient(loop: clientLoop, port: server.tlsPort, tls: TestTLSFiles())
        try await served.connect()
        try await served.send("PING\r\n")
        #expect(try await served.replies(1) == ["+PONG"])
        try await served.send(String(repeating: "ECHO abc\r\n", count: 100))
        async let report = server.stop()
        #expect(try await served.replies(100) == Array(repeating: "\"abc\"", count: 100))
        #expect(try await served.isClosedByServer())
        #expect(await served.receivedCloseNotify)
        #expect(try await waiting.isClosedByServer())
        #expect(await report.isComplete)
        await served.close()
        await waiting.close()
        try clientLoop.syncShutdown()
    }

    /// What `TLSContext`'s `@unchecked Sendable` claims: sessions made from one context on two
    /// loops at once, each serving its own connection.
    @Test func oneContextServesSessionsOnTwoLoops() async throws {
        try await withServer({ $0.tls = TestTLSFiles.server() }) { server, clientLoop in
            let otherLoop = UVLoop(name: "client-2")
            try otherLoop.start()
            let context = try TLSContext.client(caFile: TestTLSFiles.path("ca.crt"))
            let clients = [clientLoop, otherLoop].map {
                TestClient(loop: $0, port: server.tlsPort, tls: TestTLSFiles(), context: context)
            }
            try await withThrowingTaskGroup(of: [String].self) { group in
                for (index, client) in clients.enumerated() {
                    group.addTask {
                        try await client.connect()
                        for round in 0..<50 { try await client.send("ECHO c\(index)r\(round)\r\n") }
                        return try await client.replies(50)
                    }
                }
                var answers: [[String]] = []
                for try await replies in group { answers.append(replies) }
                #expect(Set(answers) == Set((0..<2).map { index in (0..<50).map { "\"c\(index)r\($0)\"" } }))
            }
            for client in clients { await client.close() }
            try otherLoop.syncShutdown()
        }
    }

    @Test func unusableFilesAreRefusedWithTheirReason() throws {
        var settings = TestTLSFiles.server()
        settings.certificateFile = "/no/such/server.crt"
        #expect(throws: TLSSetupError.self) { _ = try TLSContext.server(settings) }
        settings.certificateFile = TestTLSFiles.path("server.key")
        let notACertificate = #expect(throws: TLSSetupError.self) { _ = try TLSContext.server(settings) }
        #expect(notACertificate?.description.contains("is not a PEM certificate") == true)
        settings = TestTLSFiles.server()
        settings.keyFile = TestTLSFiles.path("client.key")
        let wrongKey = #expect(throws: TLSSetupError.self) { _ = try TLSContext.server(settings) }
        #expect(wrongKey?.description.contains("key values mismatch") == true)
        #expect(throws: TLSSetupError.self, "before any loop starts") {
            var configuration = ServerConfiguration()
            configuration.tls = settings
            _ = try RegistryServer(configuration: configuration, logger: .quiet)
        }
    }
}
