import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// What Redis clients and people typing into nc expect, for every command the server accepts.
@Suite("taskid serve: Redis conformance")
struct ConformanceTests {
    @Test func inlineCommandsEndingInLFAloneAreAnswered() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("PING\nSET a b\nEXISTS a\r\n")
            #expect(try await client.replies(3) == ["+PONG", "+OK", ":1"])
        }
    }

    @Test func inlineQuotingIsParsed() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET \"q b\" c\r\nEXISTS \"q b\" q\r\nECHO 'it\\'s'\r\n")
            #expect(try await client.replies(3) == ["+OK", ":1", "\"it's\""])
            try await client.send("SET a \"unclosed\r\n")
            #expect(try await client.replies(1) == ["-ERR Protocol error: unbalanced quotes in request"])
            #expect(try await client.isClosedByServer())
        }
    }

    @Test func setWithExtraArgumentsIsASyntaxErrorAndTheConnectionGoesOn() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k v EXTRA\r\nSET k\r\nEXISTS k\r\n")
            #expect(
                try await client.replies(3) == [
                    "-ERR syntax error", "-ERR wrong number of arguments for 'set' command", ":0",
                ])
        }
    }

    @Test func unknownCommandsAndWrongAritiesAreWordedAsRedisWordsThem() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("Foo a b\r\nfoo\r\nGET\r\nPING a b\r\nSELECT 1\r\nSELECT x\r\nCLIENT LIST\r\n")
            #expect(
                try await client.replies(7) == [
                    "-ERR unknown command 'Foo', with args beginning with: 'a' 'b' ",
                    "-ERR unknown command 'foo', with args beginning with: ",
                    "-ERR wrong number of arguments for 'get' command",
                    "-ERR wrong number of arguments for 'ping' command",
                    "-ERR DB index is out of range",
                    "-ERR value is not an integer or out of range",
                    "-ERR unknown subcommand 'LIST'. Try CLIENT HELP.",
                ])
        }
    }

    @Test func requestsWithManyArgumentsAreServed() async throws {
        // Far past the old 1,024-argument limit, in several reads.
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            let keys = (0..<50_000).map { Array("key\($0)".utf8) }
            var bytes = Array("*\(keys.count + 1)\r\n$3\r\nDEL\r\n".utf8)
            for key in keys { bytes += Array("$\(key.count)\r\n".utf8) + key + [13, 10] }
            try await client.send("SET key49999 v\r\n")
            try await client.send(bytes: bytes)
            #expect(try await client.replies(2) == ["+OK", ":1"])
        }
    }

    @Test func theArgumentLimitIsConfigurable() async throws {
        try await withServer({ $0.requestLimits.maxArguments = 3 }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET a b\r\nDEL a b c\r\n")
            #expect(
                try await client.replies(2) == [
                    "+OK", "-ERR Protocol error: too many arguments (4; this server takes at most 3)",
                ])
        }
    }

    @Test func helloSwitchesToRESP3AndBack() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("CLIENT ID\r\nHELLO 3 SETNAME me\r\n")
            let id = try await client.replies(1)[0]
            #expect(
                try await client.replies(1) == [
                    "{\"server\": \"taskid\", \"version\": \"\(taskidVersion)\", \"proto\": :3, \"id\": \(id), "
                        + "\"mode\": \"standalone\", \"role\": \"master\", \"modules\": []}"
                ])
            // RESP3's null, map and verbatim string.
            try await client.send("GET none\r\nCONFIG GET maxclients\r\nCLIENT GETNAME\r\nINFO\r\n")
            let replies = try await client.replies(4)
            #expect(replies[0] == "nil")
            #expect(replies[1] == "{\"maxclients\": \"10000\"}")
            #expect(replies[2] == "\"me\"")
            #expect(replies[3].hasPrefix("=# Server"))
            // Byte-level: RESP3's null is `_`.
            try await client.send("TASK.PHASE none\r\n")
            #expect(try await client.rawBytes(3) == Array("_\r\n".utf8))
            try await client.send("HELLO 2\r\nGET none\r\n")
            #expect(try await client.replies(2)[1] == "nil")
            try await client.send("GET none\r\n")
            #expect(try await client.rawBytes(5) == Array("$-1\r\n".utf8))
        }
    }

    @Test func helloRefusesWhatItCannotDoAndChangesNothing() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("HELLO 4\r\nHELLO x\r\nHELLO 3 BOGUS\r\nGET none\r\nHELLO 3 AUTH default secret\r\n")
            let replies = try await client.replies(5)
            #expect(
                Array(replies.prefix(4)) == [
                    "-NOPROTO unsupported protocol version",
                    "-ERR Protocol version is not an integer or out of range",
                    "-ERR Syntax error in HELLO option 'BOGUS'",
                    "nil",
                ])
            #expect(replies[4].contains("\"proto\": :3"))
        }
    }

    @Test func multiExecRunsTheQueuedCommandsAsOneBatch() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("MULTI\r\nSET t 1\r\nEXISTS t\r\nPING\r\nEXEC\r\n")
            #expect(try await client.replies(5) == ["+OK", "+QUEUED", "+QUEUED", "+QUEUED", "[+OK, :1, +PONG]"])
            try await client.send("MULTI\r\nSET t 2\r\nDISCARD\r\nEXEC\r\nDISCARD\r\n")
            #expect(
                try await client.replies(5) == [
                    "+OK", "+QUEUED", "+OK", "-ERR EXEC without MULTI", "-ERR DISCARD without MULTI",
                ])
        }
    }

    @Test func aCommandRefusedWhileQueuingAbortsTheTransaction() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("MULTI\r\nSET a 1\r\nNOPE\r\nGET\r\nMULTI\r\nEXEC\r\nEXISTS a\r\n")
            #expect(
                try await client.replies(7) == [
                    "+OK", "+QUEUED", "-ERR unknown command 'NOPE', with args beginning with: ",
                    "-ERR wrong number of arguments for 'get' command", "-ERR MULTI calls can not be nested",
                    "-EXECABORT Transaction discarded because of previous errors.", ":0",
                ])
        }
    }

    @Test func aTransactionPastItsQueueCapIsRefusedAndAborted() async throws {
        // 100 bytes: "SET k v" accounts 4 + (3+4) + (1+4) + (1+4) = 21, so four fit and the
        // fifth is refused; what follows is answered as Redis would and EXEC aborts.
        try await withServer({ $0.maxTransactionBytes = 100 }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("MULTI\r\n" + String(repeating: "SET k v\r\n", count: 5) + "PING\r\nNOPE\r\nEXEC\r\n")
            let replies = try await client.replies(9)
            #expect(Array(replies.prefix(5)) == ["+OK", "+QUEUED", "+QUEUED", "+QUEUED", "+QUEUED"])
            #expect(
                Array(replies.suffix(4)) == [
                    "-ERR transaction too large: its queued commands would take more than 100 bytes "
                        + "(--max-transaction-bytes)",
                    "+QUEUED", "-ERR unknown command 'NOPE', with args beginning with: ",
                    "-EXECABORT Transaction discarded because of previous errors.",
                ])
            // Nothing ran; the next transaction starts empty and within the cap.
            try await client.send("EXISTS k\r\nMULTI\r\nSET k v\r\nEXEC\r\n")
            #expect(try await client.replies(4) == [":0", "+OK", "+QUEUED", "[+OK]"])
        }
    }

    @Test func queuedCommandsKeepTheirBytesExactly() {
        var queue = TransactionQueue()
        let commands: [[[UInt8]]] = [[Array("SET".utf8), [], [0, 255, 13, 10]], [Array("PING".utf8)], [[1]]]
        for command in commands { queue.append(command.map { $0[...] }) }
        #expect(queue.count == 3)
        #expect(queue.commands.map { $0.map(Array.init) } == commands)
        #expect(queue.accountedBytes == commands.reduce(0) { $0 + TransactionQueue.cost(of: $1.map { $0[...] }) })
        #expect(TransactionQueue.cost(of: [Array("SET".utf8)[...], [1][...]]) == 4 + 7 + 5)
    }

    @Test func aTransactionOverSeveralLoopsSeesEveryShard() async throws {
        try await withServer({ $0.loops = 3 }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            let keys = (0..<12).map { "k\($0)" }
            var text = "MULTI\r\n"
            for key in keys { text += "SET \(key) v\r\n" }
            text += "EXISTS \(keys.joined(separator: " "))\r\nDBSIZE\r\nEXEC\r\n"
            try await client.send(text)
            let replies = try await client.replies(keys.count + 4)
            #expect(
                replies.last == "[" + Array(repeating: "+OK", count: keys.count).joined(separator: ", ") + ", :12, :12]"
            )
            #expect(await Task(executorPreference: server.frontLoop) { server.gate?.isHeldExclusively }.value == false)
        }
    }

    @Test func oneClientsBurstDoesNotHoldTheOthersBack() async throws {
        // A pipelines 20,000 INFO (about 30 MB of replies); B asks for the count of commands
        // executed so far right after. Served in fair turns, B is answered within a batch or
        // two of A's, long before A's burst is done.
        try await withServer({ $0.outputBufferLimit.hardBytes = 1 << 30 }) { server, clientLoop in
            let burster = TestClient(loop: clientLoop, port: server.port)
            let other = TestClient(loop: clientLoop, port: server.port)
            try await burster.connect()
            try await other.connect()
            let burst = 20_000
            try await burster.send(String(repeating: "INFO\r\n", count: burst))
            try await other.send("INFO\r\n")
            let info = try await other.replies(1)[0]
            let processed = try #require(
                info.split(separator: "\r\n").first { $0.hasPrefix("total_commands_processed:") }
                    .flatMap { Int($0.split(separator: ":")[1]) })
            #expect(processed < burst / 2, "B waited for \(processed) of A's commands")
            await burster.close()
        }
    }
}
