import Testing

@testable import TaskidRESP
@testable import taskid

@Suite("RESP request parser")
struct RESPParserTests {
    func parseAll(_ text: String, chunk: Int = .max, limits: RESPLimits = RESPLimits()) throws -> [[String]] {
        var parser = RESPParser(limits: limits)
        var requests: [[String]] = []
        let bytes = Array(text.utf8)
        var offset = 0
        repeat {
            let end = min(bytes.count, offset + chunk)
            parser.feed(bytes[offset..<end])
            offset = end
            while let request = try parser.next() {
                requests.append(request.map { String(decoding: $0, as: UTF8.self) })
            }
        } while offset < bytes.count
        return requests
    }

    @Test func arraysOfBulkStringsInAnySplit() throws {
        let text = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*1\r\n$4\r\nPING\r\n"
        for chunk in [1, 2, 3, 7, 1000] {
            #expect(try parseAll(text, chunk: chunk) == [["SET", "k", "v1"], ["PING"]])
        }
    }

    @Test func inlineCommandsAndEmptyRequests() throws {
        #expect(
            try parseAll("PING\r\n\r\nSET  a   b\r\n*0\r\nGET a\r\n") == [["PING"], ["SET", "a", "b"], ["GET", "a"]])
    }

    @Test func manyEmptyRequestsAreSkippedWithoutRecursion() throws {
        #expect(try parseAll(String(repeating: "*0\r\n", count: 50_000) + "*-1\r\nPING\r\n") == [["PING"]])
    }

    @Test func bulkStringsMayHoldAnyBytes() throws {
        #expect(try parseAll("*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n") == [["ECHO", "a\r\nb"]])
    }

    @Test(arguments: [
        ("*x\r\n", "invalid multibulk length"),
        ("*1\r\n+OK\r\n", "expected '$', got '+'"),
        ("*1\r\n$-5\r\n", "invalid bulk length"),
        ("*1\r\n$3\r\nabcd\r\n", "bulk string not terminated by CRLF"),
        // Past INT_MAX, as Redis.
        ("*2147483648\r\n", "invalid multibulk length"),
        // Lengths as Redis's string2ll reads them: no leading zero, no minus zero, no plus.
        ("*01\r\n$4\r\nPING\r\n", "invalid multibulk length"),
        ("*-0\r\n", "invalid multibulk length"),
        ("*+1\r\n$4\r\nPING\r\n", "invalid multibulk length"),
        ("*1\r\n$04\r\nPING\r\n", "invalid bulk length"),
        ("*1\r\n$-0\r\n", "invalid bulk length"),
        ("*1\r\n$00\r\n\r\n", "invalid bulk length"),
        ("*\r\n", "invalid multibulk length"),
        ("*-9223372036854775809\r\n", "invalid multibulk length"),
        ("*99999999999999999999\r\n", "invalid multibulk length"),
        ("*1\r\n$99999999999999999999\r\n", "invalid bulk length"),
        ("*1\r\n$\r\n", "invalid bulk length"),
    ])
    func malformedInputIsATypedError(input: String, message: String) {
        #expect(throws: RESPProtocolError(message: message)) { _ = try parseAll(input) }
    }

    @Test(arguments: [
        ("SET \"q b\" c\r\n", ["SET", "q b", "c"]),
        ("ECHO \"a\\tb\\x41\\\"\\\\\"\n", ["ECHO", "a\tbA\"\\"]),
        ("ECHO 'it\\'s' 'a\\nb'\n", ["ECHO", "it's", "a\\nb"]),
        ("SET a\"b c\" d\r\n", ["SET", "ab c", "d"]),
        ("SET \"\" ''\n", ["SET", "", ""]),
        ("  PING  \t\r\n", ["PING"]),
        // As Redis: \v and \f separate words only between them. This server's own rule: a NUL
        // ends the line's words (Redis stalls on it; see RESPInlineCommand).
        ("GET a\u{0C}b\n", ["GET", "a\u{0C}b"]),
        ("GET \u{0B}a\n", ["GET", "a"]),
        ("GET a\u{00}b c\n", ["GET", "a"]),
    ])
    func inlineQuotingFollowsRedis(input: String, expected: [String]) throws {
        #expect(try parseAll(input) == [expected])
    }

    @Test(arguments: ["SET \"a\r\n", "SET 'a\r\n", "SET \"a\"b\r\n", "SET 'a'b\n"])
    func unbalancedQuotesAreAProtocolError(input: String) {
        #expect(throws: RESPProtocolError(message: "unbalanced quotes in request")) { _ = try parseAll(input) }
    }

    @Test func inlineCommandsMayEndInLFAlone() throws {
        #expect(try parseAll("PING\nSET a b\n\nGET a\r\n", chunk: 3) == [["PING"], ["SET", "a", "b"], ["GET", "a"]])
    }

    @Test func aRequestOfManyArgumentsIsParsedOnceAcrossReads() throws {
        // 200,000 arguments in 64 KiB reads: resumed where each read stopped, not re-parsed.
        var text = "*200001\r\n$3\r\nDEL\r\n"
        for index in 0..<200_000 { text += "$\(String(index).count)\r\n\(index)\r\n" }
        text += "*1\r\n$4\r\nPING\r\n"
        let requests = try parseAll(text, chunk: 65_536)
        #expect(requests.count == 2)
        #expect(requests[0].count == 200_001)
        #expect(requests[0].last == "199999")
        #expect(requests[1] == ["PING"])
    }

    @Test func zeroAndOrdinaryLengthsAreRead() throws {
        #expect(try parseAll("*1\r\n$0\r\n\r\n*2\r\n$10\r\n0123456789\r\n$1\r\n0\r\n") == [[""], ["0123456789", "0"]])
        // "*-5" counts as empty, as in Redis (any count below one), at any length string2ll reads.
        #expect(try parseAll("*-5\r\n*-9223372036854775808\r\n*1\r\n$4\r\nPING\r\n") == [["PING"]])
    }

    @Test func anIncompleteRequestHoldsItsBytesAndNoRecordPerArgument() throws {
        // A million empty arguments (6 MB on the wire), all but the last received, fed in 64 KiB
        // reads: the parser holds its buffer and nothing per argument (a record per argument,
        // as before, was 16 bytes or more each: 2.7 times the bytes held), and the caller's
        // array of slices is let go rather than kept at a million entries.
        let argument: [UInt8] = Array("$0\r\n\r\n".utf8)
        let count = 1_000_000
        var wire = Array("*\(count)\r\n".utf8)
        for _ in 0..<(count - 1) { wire += argument }
        var parser = RESPParser()
        var arguments: [ArraySlice<UInt8>] = []
        var offset = 0
        while offset < wire.count {
            let end = min(wire.count, offset + 65_536)
            parser.feed(wire[offset..<end])
            offset = end
            #expect(try !parser.next(into: &arguments))
            #expect(arguments.capacity <= 1024)
        }
        #expect(parser.pendingBytes == wire.count)
        #expect(parser.retainedBytes <= 2 * parser.pendingBytes + 65_536)
        // And the request completes whole.
        parser.feed(argument)
        #expect(try parser.next(into: &arguments))
        #expect(arguments.count == count && arguments.allSatisfy(\.isEmpty))
    }

    @Test func aRequestCutInsideAnArgumentAfterOthersKeepsThemAll() throws {
        // Resumed after some arguments were complete: their slices are made again at the end.
        let text = "*4\r\n$3\r\nDEL\r\n$2\r\nab\r\n$3\r\ncde\r\n$4\r\nfghi\r\n"
        for chunk in 1...text.utf8.count {
            #expect(try parseAll(text, chunk: chunk) == [["DEL", "ab", "cde", "fghi"]])
        }
    }

    @Test func theArgumentLimitHoldsForArraysAndInlineCommands() throws {
        let limits = RESPLimits(maxArguments: 2)
        #expect(throws: RESPProtocolError.self) { _ = try parseAll("*3\r\n", limits: limits) }
        #expect(throws: RESPProtocolError.self) { _ = try parseAll("a b c\r\n", limits: limits) }
        #expect(try parseAll("*2\r\n$1\r\na\r\n$1\r\nb\r\na b\n", limits: limits) == [["a", "b"], ["a", "b"]])
    }

    @Test func oversizedRequestsAreRefusedBeforeTheyAreBuffered() {
        let limits = RESPLimits(maxQueryBufferBytes: 100, maxArguments: 8)
        #expect(throws: RESPProtocolError.self) { _ = try parseAll("*1\r\n$5000\r\n", limits: limits) }
        #expect(throws: RESPProtocolError.self) { _ = try parseAll("*9\r\n", limits: limits) }
        #expect(throws: RESPProtocolError.self) {
            _ = try parseAll(String(repeating: "x", count: 70_000), limits: RESPLimits())
        }
    }

    /// An inline command is a request too: below the 64 KiB inline limit, `maxQueryBufferBytes`
    /// bounds it (the fuzzer found a 4,212-byte inline argument under a 4,096-byte limit).
    @Test func anInlineCommandLongerThanTheRequestLimitIsRefused() throws {
        let limits = RESPLimits(maxQueryBufferBytes: 100, maxArguments: 8)
        let line = "SET k " + String(repeating: "v", count: 200)
        #expect(throws: RESPProtocolError(message: "too big inline request")) {
            _ = try parseAll(line + "\n", limits: limits)
        }
        #expect(throws: RESPProtocolError(message: "too big inline request"), "nor while its line is incomplete") {
            _ = try parseAll(line, limits: limits)
        }
        #expect(try parseAll("SET k " + String(repeating: "v", count: 80) + "\n", limits: limits).first?.count == 3)
    }

    /// `proto-max-bulk-len` bounds one argument, `client-query-buffer-limit` the whole request:
    /// a request of several arguments each under the first may be refused by the second, and a
    /// value at the bulk limit is taken when the buffer has room for it.
    @Test func theBulkLimitBoundsOneArgumentAndTheQueryBufferTheRequest() throws {
        let limits = RESPLimits(maxBulkBytes: 10, maxQueryBufferBytes: 64, maxArguments: 8)
        #expect(throws: RESPProtocolError(message: "invalid bulk length")) {
            _ = try parseAll("*2\r\n$3\r\nSET\r\n$11\r\n", limits: limits)
        }
        let atTheLimit = "*2\r\n$3\r\nSET\r\n$10\r\n0123456789\r\n"
        #expect(try parseAll(atTheLimit, limits: limits) == [["SET", "0123456789"]])
        let fiveArguments = "*5\r\n" + String(repeating: "$10\r\n0123456789\r\n", count: 5)
        #expect(
            throws: RESPProtocolError(message: "request larger than the client query buffer limit (64 bytes)")
        ) { _ = try parseAll(fiveArguments, limits: limits) }
    }
}
