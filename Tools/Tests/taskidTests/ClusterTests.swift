import ArgumentParser
import Foundation
import Testing

@testable import TaskidCluster
@testable import TaskidServer
@testable import taskid

#if canImport(Glibc)
    import Glibc
#endif

/// Static Redis Cluster mode: slots, the configuration file, redirections and the CLUSTER
/// replies, as redis-cli -c, redis-benchmark --cluster and redis-py's RedisCluster read them.
@Suite("taskid serve: cluster mode")
struct ClusterTests {
    /// Two nodes with half the slots each, and slot 16383 served by nobody. This process is
    /// `me`.
    static let text = """
        # two nodes
        me 127.0.0.1:7001 0-8191   # the first half
        other 10.0.0.2:7002 8192-16382
        """

    static func cluster() throws -> ClusterConfiguration {
        try ClusterConfiguration.parse(text, myself: "me")
    }

    @Test func slotsAreCRC16XModemWithHashTagsAsRedisComputesThem() {
        #expect(HashSlot.crc16(Array("123456789".utf8)) == 0x31C3)
        let slots: [(String, Int)] = [
            ("foo", 12182), ("somekey", 11058), ("foo{hash_tag}", 2515), ("bar{hash_tag}", 2515), ("bar", 5061),
            ("{user1000}.following", 3443), ("{user1000}.followers", 3443), ("foo{}{bar}", 8363),
            ("foo{{bar}}zap", 4015), ("foo{bar}{zap}", 5061), ("", 0), ("key:{06S}:x", 0),
            ("a{b", HashSlot.of(Array("a{b".utf8))),
        ]
        for (key, slot) in slots { #expect(HashSlot.of(Array(key.utf8)) == slot, "\(key)") }
    }

    @Test func theConfigurationNamesEveryNodeAndWhoServesEachSlot() throws {
        let cluster = try Self.cluster()
        #expect(cluster.nodes.map(\.id) == ["me", "other"])
        #expect(cluster.myself == ClusterNode(id: "me", host: "127.0.0.1", port: 7001, slotRanges: [0...8191]))
        #expect(cluster.owner(ofSlot: 0) == 0 && cluster.owner(ofSlot: 8191) == 0)
        #expect(cluster.owner(ofSlot: 8192) == 1 && cluster.owner(ofSlot: 16382) == 1)
        #expect(cluster.owner(ofSlot: 16383) == nil)
        #expect(!cluster.coversEverySlot)
        let single = try ClusterConfiguration.parse("n [::1]:7000 5 0-4 6-16383", myself: "n")
        #expect(single.myself.host == "::1" && single.coversEverySlot)
        // A file written with CRLF reads the same as one with LF.
        #expect(
            try ClusterConfiguration.parse(Self.text.replacingOccurrences(of: "\n", with: "\r\n"), myself: "me")
                == cluster)
        // IPv6 addresses as Redis 7.0 gives them: no brackets (clients split at the last colon).
        #expect(RegistryServer.addressText(host: "::1", port: 7000) == "::1:7000")
        #expect(RegistryServer.nodesText(single) == "n ::1:7000@0 myself,master - 0 0 1 connected 0-16383\n")
    }

    @Test(arguments: [
        ("", "lists no node"),
        ("me 127.0.0.1:7001", "line 1: expected ID HOST:PORT SLOTS..., got 'me 127.0.0.1:7001'"),
        ("m/e 127.0.0.1:7001 0", "line 1: the id 'm/e' is not 1 to 40 letters, digits, '-', '_' or '.'"),
        ("me 127.0.0.1:7001 0\nme 127.0.0.1:7002 1", "line 2: the id 'me' is listed twice"),
        ("me 127.0.0.1 0", "line 1: expected HOST:PORT with a port in 1...65535, got '127.0.0.1'"),
        ("me 127.0.0.1:0 0", "line 1: expected HOST:PORT with a port in 1...65535, got '127.0.0.1:0'"),
        ("me :7001 0", "line 1: expected HOST:PORT with a port in 1...65535, got ':7001'"),
        ("me h:1 0\nyou h:1 1", "line 2: the address h:1 is listed twice"),
        ("me h:1 16384", "line 1: expected a slot or FIRST-LAST in 0...16383, got '16384'"),
        ("me h:1 9-3", "line 1: expected a slot or FIRST-LAST in 0...16383, got '9-3'"),
        ("me h:1 -3", "line 1: expected a slot or FIRST-LAST in 0...16383, got '-3'"),
        ("me h:1 0-10\n\n# x\nyou h:2 10-20", "line 4: slot 10 is already served by 'me'"),
        ("me h:1 0-10 5", "line 1: slot 5 is already served by 'me'"),
        ("me h:1 7 7", "line 1: slot 7 is already served by 'me'"),
        ("me h:1 0\r\nme h:2 1", "line 2: the id 'me' is listed twice"),
        ("you h:1 0", "has no node 'me' (--cluster-node)"),
        ("me 127.0.0.1:+7001 0", "line 1: expected HOST:PORT with a port in 1...65535, got '127.0.0.1:+7001'"),
        ("me 127.0.0.1: 7001 0", "line 1: expected HOST:PORT with a port in 1...65535, got '127.0.0.1:'"),
        (
            "me no.such.host!:7001 0",
            "line 1: the host 'no.such.host!' is not an IPv4 address or a host name (letters, digits, '-' and '.'; an IPv6 address goes in brackets)"
        ),
        ("me [::1:7001 0", "line 1: expected an IPv6 address in brackets, [ADDRESS]:PORT, got '[::1:7001'"),
        ("me [zz::1]:7001 0", "expected an IPv6 address in brackets, [ADDRESS]:PORT, got '[zz::1]:7001'"),
        (
            "me a..b:7001 0",
            "the host 'a..b' is not an IPv4 address or a host name (letters, digits, '-' and '.'; an IPv6 address goes in brackets)"
        ),
        ("m\u{1B}[31me h:1 0", "line 1: the id 'm\\u{1B}[31me' is not 1 to 40 letters, digits, '-', '_' or '.'"),
        (
            "me h:1 " + String(repeating: "9", count: 100_000),
            "got '" + String(repeating: "9", count: 64) + "… (100000 bytes)'"
        ),
    ])
    func aWrongConfigurationIsRefusedWithItsLine(text: String, message: String) {
        #expect {
            _ = try ClusterConfiguration.parse(text, myself: "me", source: "c.conf")
        } throws: { error in
            "\(error)".hasPrefix("c.conf") && "\(error)".hasSuffix(message)
        }
    }

    @Test func keysOfOtherSlotsAreRedirectedAndKeylessCommandsRunHere() async throws {
        try await withServer({ $0.cluster = try? Self.cluster() }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            // "bar" (5061) is ours, "foo" (12182) the other node's, slot 16383 nobody's
            // ("a{k}" hashes "k": find a key of slot 16383 by search).
            let orphan = (0..<100_000).lazy.map { "o\($0)" }.first { HashSlot.of(Array($0.utf8)) == 16383 }!
            try await client.send(
                "SET bar 1\r\nSET foo 1\r\nGET foo\r\nEXISTS foo\r\nTASK.PHASE foo\r\nSET \(orphan) 1\r\n"
                    + "DEL bar foo\r\nEXISTS bar {bar}x\r\nDBSIZE\r\nPING\r\nCLUSTER KEYSLOT foo\r\nREADONLY\r\n"
                    + "SELECT 0\r\nSELECT 1\r\n")
            #expect(
                try await client.replies(14) == [
                    "+OK", "-MOVED 12182 10.0.0.2:7002", "-MOVED 12182 10.0.0.2:7002", "-MOVED 12182 10.0.0.2:7002",
                    "-MOVED 12182 10.0.0.2:7002", "-CLUSTERDOWN Hash slot not served",
                    "-CROSSSLOT Keys in request don't hash to the same slot", ":1", ":1", "+PONG", ":12182", "+OK",
                    "+OK", "-ERR SELECT is not allowed in cluster mode",
                ])
        }
    }

    @Test func clusterRepliesAreRedisesBytes() async throws {
        try await withServer({ $0.cluster = try? Self.cluster() }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            let slots =
                "*2\r\n*3\r\n:0\r\n:8191\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n$2\r\nme\r\n*0\r\n"
                + "*3\r\n:8192\r\n:16382\r\n*4\r\n$8\r\n10.0.0.2\r\n:7002\r\n$5\r\nother\r\n*0\r\n"
            let nodes =
                "me 127.0.0.1:7001@0 myself,master - 0 0 1 connected 0-8191\n"
                + "other 10.0.0.2:7002@0 master - 0 0 2 connected 8192-16382\n"
            try await client.send("CLUSTER SLOTS\r\nCLUSTER NODES\r\nCLUSTER MYID\r\n")
            let expected = slots + "$\(nodes.utf8.count)\r\n\(nodes)\r\n" + "$2\r\nme\r\n"
            #expect(try await client.rawBytes(expected.utf8.count) == Array(expected.utf8))
            try await client.send("CLUSTER INFO\r\nHELLO 3\r\nCLUSTER SHARDS\r\n")
            let replies = try await client.replies(3)
            #expect(replies[0].hasPrefix("\"cluster_state:fail\r\ncluster_slots_assigned:16383\r\n"))
            #expect(replies[0].hasSuffix("total_cluster_links_buffer_limit_exceeded:0\r\n\""))
            #expect(replies[0].contains("cluster_known_nodes:2\r\ncluster_size:2\r\n"))
            #expect(replies[1].contains("\"mode\": \"cluster\""))
            #expect(
                replies[2] == "[{\"slots\": [:0, :8191], \"nodes\": [{\"id\": \"me\", \"port\": :7001, "
                    + "\"ip\": \"127.0.0.1\", \"endpoint\": \"127.0.0.1\", \"role\": \"master\", "
                    + "\"replication-offset\": :0, \"health\": \"online\"}]}, {\"slots\": [:8192, :16382], "
                    + "\"nodes\": [{\"id\": \"other\", \"port\": :7002, \"ip\": \"10.0.0.2\", "
                    + "\"endpoint\": \"10.0.0.2\", \"role\": \"master\", \"replication-offset\": :0, "
                    + "\"health\": \"online\"}]}]")
            // RESP3: CLUSTER SLOTS's metadata is an empty map.
            try await client.send("CLUSTER SLOTS\r\n")
            #expect(try await client.replies(1)[0].hasPrefix("[[:0, :8191, [\"127.0.0.1\", :7001, \"me\", {}]]"))
            try await client.send("CLUSTER NOPE\r\nCLUSTER SLOTS x\r\n")
            #expect(
                try await client.replies(2) == [
                    "-ERR unknown subcommand 'NOPE'. Try CLUSTER HELP.",
                    "-ERR wrong number of arguments for 'cluster|slots' command",
                ])
        }
    }

    @Test func aTransactionStaysOnOneSlotOfThisNode() async throws {
        try await withServer({ $0.cluster = try? Self.cluster() }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            // Another node's key while queuing: refused at once, and EXEC aborts.
            try await client.send("MULTI\r\nSET bar 1\r\nSET foo 1\r\nEXEC\r\n")
            #expect(
                try await client.replies(4) == [
                    "+OK", "+QUEUED", "-MOVED 12182 10.0.0.2:7002",
                    "-EXECABORT Transaction discarded because of previous errors.",
                ])
            // Two of this node's slots ("bar" 5061, "b" 3300): queued, then refused as a whole at EXEC, nothing run.
            try await client.send("MULTI\r\nSET bar 1\r\nSET b 1\r\nPING\r\nEXEC\r\nEXISTS bar\r\nEXISTS b\r\n")
            #expect(
                try await client.replies(7) == [
                    "+OK", "+QUEUED", "+QUEUED", "+QUEUED", "-CROSSSLOT Keys in request don't hash to the same slot",
                    ":0", ":0",
                ])
            // One slot: runs.
            try await client.send("MULTI\r\nSET {bar}1 1\r\nSET bar 2\r\nEXISTS {bar}1 bar\r\nEXEC\r\n")
            #expect(try await client.replies(5) == ["+OK", "+QUEUED", "+QUEUED", "+QUEUED", "[+OK, +OK, :2]"])
            // Doomed already: another node's key still gets -MOVED, as in Redis, and EXEC aborts.
            try await client.send("MULTI\r\nNOPE\r\nSET foo 1\r\nSET bar 1\r\nEXEC\r\n")
            #expect(
                try await client.replies(5) == [
                    "+OK", "-ERR unknown command 'NOPE', with args beginning with: ", "-MOVED 12182 10.0.0.2:7002",
                    "+QUEUED", "-EXECABORT Transaction discarded because of previous errors.",
                ])
            // Doomed, with the keys taken on two slots: Redis's cluster check of EXEC comes first.
            try await client.send("MULTI\r\nNOPE\r\nSET bar 1\r\nSET b 1\r\nEXEC\r\n")
            #expect(
                try await client.replies(5) == [
                    "+OK", "-ERR unknown command 'NOPE', with args beginning with: ", "+QUEUED", "+QUEUED",
                    "-CROSSSLOT Keys in request don't hash to the same slot",
                ])
        }
    }

    @Test func aStandaloneServerHasNoClusterCommands() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("CLUSTER SLOTS\r\nREADONLY\r\nSET foo 1\r\nSELECT 1\r\n")
            #expect(
                try await client.replies(4) == [
                    "-ERR This instance has cluster support disabled",
                    "-ERR This instance has cluster support disabled", "+OK", "-ERR DB index is out of range",
                ])
        }
    }

    @Test func commandDescribesEveryCommandWithItsKeys() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("COMMAND INFO get nope\r\n")
            let get =
                "*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
                + "*2\r\n+@read\r\n+@fast\r\n*0\r\n*0\r\n*0\r\n"
                + "$-1\r\n"
            #expect(try await client.rawBytes(get.utf8.count) == Array(get.utf8))
            try await client.send(
                "COMMAND COUNT\r\nCOMMAND GETKEYS DEL a b\r\nCOMMAND GETKEYS PING\r\nCOMMAND GETKEYS NOPE x\r\n"
                    + "COMMAND INFO task.phase\r\nCOMMAND\r\n")
            let replies = try await client.replies(6)
            #expect(replies[0] == ":\(RegistryServer.commandArity.count)")
            #expect(replies[1] == "[\"a\", \"b\"]")
            #expect(replies[2] == "-ERR The command has no key arguments")
            #expect(replies[3] == "-ERR Invalid command specified")
            #expect(
                replies[4] == "[[\"task.phase\", :2, [+readonly, +fast], :1, :1, :1, [+@read, +@fast], [], [], []]]")
            #expect(replies[5].hasPrefix("[[\"asking\", :1, [], :0, :0, :0, [+@connection, +@fast], [], [], []], "))
        }
    }

    /// Writes `text` to a new temporary file and returns its path.
    static func temporaryFile(_ text: String) throws -> String {
        var template = Array("/tmp/taskid-cluster-XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        try #require(descriptor >= 0)
        let bytes = Array(text.utf8)
        #expect(write(descriptor, bytes, bytes.count) == bytes.count)
        close(descriptor)
        return String(cString: template)
    }

    @Test func aByteOrderMarkIsNotPartOfTheFirstID() throws {
        let cluster = try ClusterConfiguration.parse("\u{FEFF}node1 127.0.0.1:7001 0-16383", myself: "node1")
        #expect(cluster.myself.id == "node1")
    }

    @Test func theSlotsNoNodeServesAreListed() throws {
        let cluster = try ClusterConfiguration.parse("me h:1 0-99 200 202-16382", myself: "me")
        #expect(!cluster.coversEverySlot)
        #expect(cluster.unservedSlots == [100...199, 201...201, 16383...16383])
        #expect(try ClusterConfiguration.parse("me h:1 0-16383", myself: "me").unservedSlots.isEmpty)
    }

    @Test func aFileThatIsNotARegularFileIsRefusedWithTheReasonWithoutBlocking() throws {
        let directory = FileManager.default.temporaryDirectory.path
        #expect {
            _ = try ClusterConfiguration.load(path: directory, myself: "me")
        } throws: { error in
            "\(error)" == "cannot read \(directory): not a regular file (a directory)"
        }
        let fifo = directory + "/taskid-cluster-fifo-\(getpid())"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        #expect {
            _ = try ClusterConfiguration.load(path: fifo, myself: "me")
        } throws: { error in
            "\(error)" == "cannot read \(fifo): not a regular file (a special file)"
        }
        #expect {
            _ = try ClusterConfiguration.load(path: "/nonexistent/c", myself: "me")
        } throws: { error in
            "\(error)" == "cannot read /nonexistent/c: No such file or directory"
        }
    }

    @Test func theCommandLineReadsTheClusterAndTakesTheNodesPort() throws {
        let path = try Self.temporaryFile(Self.text)
        defer { unlink(path) }
        let command = try ServeCommand.parse(["--cluster-config", path, "--cluster-node", "other"])
        #expect(try command.serverConfiguration.port == 7002)
        #expect(try command.serverConfiguration.cluster == (try ClusterConfiguration.parse(Self.text, myself: "other")))
        let explicit = try ServeCommand.parse(["--cluster-config", path, "--cluster-node", "me", "--port", "7001"])
        #expect(try explicit.serverConfiguration.port == 7001)
        for (arguments, message) in [
            (
                ["--cluster-config", path, "--cluster-node", "me", "--port", "7002"],
                "--port 7002 is not the port of node 'me'"
            ),
            (["--cluster-config", path], "--cluster-config needs --cluster-node"),
            (["--cluster-node", "me"], "--cluster-node needs --cluster-config"),
            (["--cluster-config", path, "--cluster-node", "x"], "has no node 'x' (--cluster-node)"),
            (["--cluster-config", "/nonexistent/c", "--cluster-node", "x"], "cannot read /nonexistent/c"),
        ] {
            let error = #expect(throws: (any Error).self) { try ServeCommand.parse(arguments) }
            #expect(error.map { ServeCommand.message(for: $0).contains(message) } == true, "\(arguments)")
        }
    }
}
