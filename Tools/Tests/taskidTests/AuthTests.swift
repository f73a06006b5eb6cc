import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

#if canImport(Glibc)
    import Glibc
#endif

/// AUTH, HELLO … AUTH, ACL users, protected mode and the operator's trace, through the server.
@Suite("taskid serve: passwords, users and protected mode")
struct AuthTests {
    static func withPassword(_ configuration: inout ServerConfiguration) {
        configuration.access.requirePassword(Array("s3cret".utf8))
    }

    @Test func everyCommandWaitsForAuthentication() async throws {
        try await withServer(Self.withPassword) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            // SET too: the fast path is not taken before AUTH.
            try await client.send(
                "PING\r\nSET k 1\r\nAUTH wrong\r\nAUTH default wrong\r\nAUTH s3cret\r\nSET k 1\r\nPING\r\n")
            #expect(
                try await client.replies(7) == [
                    "-NOAUTH Authentication required.", "-NOAUTH Authentication required.",
                    "-" + RegistryServer.wrongPassword, "-" + RegistryServer.wrongPassword, "+OK", "+OK", "+PONG",
                ])
            let named = TestClient(loop: clientLoop, port: server.port)
            try await named.connect()
            try await named.send("AUTH default s3cret\r\nGET k\r\n")
            #expect(try await named.replies(2).first == "+OK")
        }
    }

    @Test func helloAuthenticatesOrIsRefused() async throws {
        try await withServer(Self.withPassword) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send(
                "HELLO 3\r\nHELLO 3 AUTH default nope\r\nPING\r\nHELLO 2 AUTH default s3cret\r\nPING\r\n")
            let replies = try await client.replies(5)
            #expect(replies[0].hasPrefix("-NOAUTH HELLO must be called with the client already authenticated"))
            #expect(replies[1] == "-" + RegistryServer.wrongPassword)
            #expect(replies[2] == "-NOAUTH Authentication required.", "a failed HELLO AUTH changes nothing")
            #expect(replies[3].hasPrefix("[\"server\", \"taskid\""))
            #expect(replies[4] == "+PONG")
        }
    }

    /// HELLO runs before login only with its AUTH option: not with a client name that reads
    /// "AUTH" (found in review).
    @Test func helloWithoutItsAuthOptionTellsNothingBeforeLogin() async throws {
        try await withServer(Self.withPassword) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("HELLO 3 SETNAME AUTH\r\nCLIENT GETNAME\r\n")
            let replies = try await client.replies(2)
            #expect(replies[0] == "-" + RegistryServer.helloBeforeAuthentication)
            #expect(replies[1] == "-NOAUTH Authentication required.")
        }
    }

    /// Before login a request is held to Redis's bounds (10 arguments, 16 KiB each): a client
    /// that has not logged in cannot make the server reserve or buffer a large request.
    @Test func beforeLoginALargeRequestIsAProtocolError() async throws {
        try await withServer(Self.withPassword) { server, clientLoop in
            let big = TestClient(loop: clientLoop, port: server.port)
            try await big.connect()
            try await big.send("*1\r\n$536870912\r\n")
            #expect(try await big.replies(1) == ["-ERR Protocol error: unauthenticated bulk length"])
            #expect(try await big.isClosedByServer())
            let many = TestClient(loop: clientLoop, port: server.port)
            try await many.connect()
            try await many.send("*11\r\n")
            #expect(try await many.replies(1) == ["-ERR Protocol error: unauthenticated multibulk length"])
            let after = TestClient(loop: clientLoop, port: server.port)
            try await after.connect()
            try await after.send(command: Array("AUTH".utf8), Array("s3cret".utf8))
            try await after.send(command: Array("ECHO".utf8), [UInt8](repeating: 1, count: 100_000))
            let replies = try await after.replies(2)
            #expect(replies[0] == "+OK" && replies[1].count == 100_002, "once logged in, the usual limits")
        }
    }

    @Test func aPasswordWhereNoneIsSetIsAnError() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("AUTH x\r\nAUTH default x\r\n")
            let replies = try await client.replies(2)
            #expect(replies[0].hasPrefix("-ERR AUTH <password> called without any password configured"))
            #expect(replies[1] == "+OK", "as Redis: the default user without a password takes any")
        }
    }

    @Test func aUserWithoutTheAdminCategoryCannotTouchTheTrace() async throws {
        let access = try AccessControl(aclFile: "user app on >apppass +@all -@admin ~*")
        try await withServer({ $0.access = access }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send(
                "AUTH app apppass\r\nTASK.TRACE START\r\nSET k 1\r\nMULTI\r\nTASK.TRACE DUMP\r\nSET k 2\r\nEXEC\r\n")
            #expect(
                try await client.replies(7) == [
                    "+OK", "-NOPERM this user has no permissions to run the 'task.trace' command", "+OK", "+OK",
                    "-NOPERM this user has no permissions to run the 'task.trace' command", "+QUEUED",
                    "-EXECABORT Transaction discarded because of previous errors.",
                ])
        }
    }

    /// Wrong passwords and protected mode's refusals are logged a line a second at most, each
    /// line with how many came since the last: a client repeating them cannot flood the log.
    @Test func repeatedFailuresAreLoggedALineASecond() {
        var log = RateLimitedLog()
        let second: UInt64 = 1_000_000_000
        #expect(log.note(at: 5 * second) == 1, "the first at once")
        #expect(log.note(at: 5 * second + 1) == nil && log.note(at: 6 * second - 1) == nil)
        #expect(log.note(at: 6 * second) == 3, "a second later, with the two held back")
        #expect(log.note(at: 6 * second + 10) == nil)
    }

    /// As Redis 7.0: before login, an unknown command or a wrong arity is answered as such, and
    /// only a command that could run gets NOAUTH.
    @Test func unknownCommandsAndWrongAritiesAreAnsweredBeforeNOAUTH() async throws {
        try await withServer(Self.withPassword) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("FOO\r\nGET\r\nGET k\r\n")
            #expect(
                try await client.replies(3) == [
                    "-ERR unknown command 'FOO', with args beginning with: ",
                    "-ERR wrong number of arguments for 'get' command", "-NOAUTH Authentication required.",
                ])
        }
    }

    /// As Redis 7.0: an EXEC the user may not run discards the transaction (the next command
    /// runs, not queued), and a refused command with subcommands is named with its subcommand.
    @Test func anExecTheUserMayNotRunDiscardsTheTransaction() async throws {
        let access = try AccessControl(aclFile: "user app on >apppass +@all -exec -@admin ~*")
        try await withServer({ $0.access = access }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("AUTH app apppass\r\nMULTI\r\nGET a\r\nEXEC\r\nPING\r\nCONFIG GET save\r\n")
            #expect(
                try await client.replies(6) == [
                    "+OK", "+OK", "+QUEUED",
                    "-EXECABORT Transaction discarded because of: NOPERM this user has no permissions to run the "
                        + "'exec' command",
                    "+PONG", "-NOPERM this user has no permissions to run the 'config|get' command",
                ])
        }
    }

    @Test func aClientCannotStopOrRestartTheOperatorsTrace() async throws {
        try await withServer({ $0.tracePath = "/tmp/taskid-auth-test-trace.json" }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("TASK.TRACE STOP\r\nTASK.TRACE START 10\r\n")
            let replies = try await client.replies(2)
            #expect(replies[0].hasPrefix("-ERR the trace is recorded for the operator's --trace file: TASK.TRACE STOP"))
            #expect(
                replies[1].hasPrefix("-ERR the trace is recorded for the operator's --trace file: TASK.TRACE START"))
        }
    }

    /// This host's first IPv4 address that is not loopback, if it has one.
    static let otherAddress: String? = {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            if let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET) {
                var text = [CChar](repeating: 0, count: 64)
                // An AF_INET address, as the family says.
                let ipv4 = UnsafeRawPointer(address).assumingMemoryBound(to: sockaddr_in.self)
                var inAddress = ipv4.pointee.sin_addr
                if inet_ntop(AF_INET, &inAddress, &text, socklen_t(text.count)) != nil {
                    let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    if !host.hasPrefix("127.") { return host }
                }
            }
            entry = current.pointee.ifa_next
        }
        return nil
    }()

    @Test(.enabled(if: otherAddress != nil, "this host has an address other than loopback"))
    func protectedModeServesOnlyLoopbackWithoutAPassword() async throws {
        let other = try #require(Self.otherAddress)
        try await withServer({ $0.host = "0.0.0.0" }) { server, clientLoop in
            let outsider = TestClient(loop: clientLoop, port: server.port, host: other)
            try await outsider.connect()
            #expect(
                try await outsider.replies(1).first?.hasPrefix("-DENIED taskid is running in protected mode") == true)
            #expect(try await outsider.isClosedByServer())
            let local = TestClient(loop: clientLoop, port: server.port)
            try await local.connect()
            try await local.send("PING\r\n")
            #expect(try await local.replies(1) == ["+PONG"])
        }
        try await withServer({
            $0.host = "0.0.0.0"
            Self.withPassword(&$0)
        }) { server, clientLoop in
            let outsider = TestClient(loop: clientLoop, port: server.port, host: other)
            try await outsider.connect()
            try await outsider.send("AUTH s3cret\r\nPING\r\n")
            #expect(try await outsider.replies(2) == ["+OK", "+PONG"], "with a password, other hosts are served")
        }
        try await withServer({
            $0.host = "0.0.0.0"
            $0.protectedMode = false
        }) { server, clientLoop in
            let outsider = TestClient(loop: clientLoop, port: server.port, host: other)
            try await outsider.connect()
            try await outsider.send("PING\r\n")
            #expect(try await outsider.replies(1) == ["+PONG"], "protected mode off")
        }
    }
}
