import ArgumentParser
import Foundation
import Testing

@testable import TaskidCluster
@testable import TaskidRESP
@testable import TaskidServer
@testable import taskid

@Suite("taskid's command line")
struct CommandLineTests {
    @Test func noOptionsGiveTheDefaultConfiguration() throws {
        let command = try ServeCommand.parse([])
        #expect(try command.serverConfiguration == ServerConfiguration())
        #expect(try command.serverConfiguration.port == 6380)
        #expect(try command.serverConfiguration.work == .sleep(milliseconds: 10))
        #expect(command.logLevel == .info)
    }

    @Test func everyOptionReachesTheConfiguration() throws {
        let command = try ServeCommand.parse([
            "--host", "::1", "--port", "0", "--loops", "3", "--debounce-ms", "50", "--work", "task-sleep:7",
            "--max-clients", "5", "--client-query-buffer-limit", "4kb", "--proto-max-bulk-len", "1000",
            "--client-output-buffer-limit", "10mb 1mb 5", "--log-level", "debug", "--max-arguments", "77",
            "--drain-timeout-ms", "250", "--upstream-connect-timeout-ms", "11", "--upstream-reply-timeout-ms", "12",
            "--upstream-max-connections", "13", "--max-transaction-bytes", "1000", "--timeout-ms", "30",
            "--max-running", "64",
        ])
        var expected = ServerConfiguration()
        expected.host = "::1"
        expected.port = 0
        expected.loops = 3
        expected.debounceMilliseconds = 50
        expected.timeoutMilliseconds = 30
        expected.maxRunning = 64
        expected.work = .taskSleep(milliseconds: 7)
        expected.maxClients = 5
        expected.requestLimits = RESPLimits(maxBulkBytes: 1000, maxQueryBufferBytes: 4096, maxArguments: 77)
        expected.outputBufferLimit = OutputBufferLimit(hardBytes: 10 << 20, softBytes: 1 << 20, softSeconds: 5)
        expected.drainTimeoutMilliseconds = 250
        expected.upstreamConnectTimeoutMilliseconds = 11
        expected.upstreamReplyTimeoutMilliseconds = 12
        expected.upstreamMaxConnections = 13
        expected.maxTransactionBytes = 1000
        #expect(try command.serverConfiguration == expected)
        #expect(command.logLevel.level == .debug)
    }

    /// `--max-request-bytes` always counted the whole request: it stays, deprecated, as
    /// `--client-query-buffer-limit`; the two at once are refused.
    @Test func theOldRequestLimitIsTheQueryBufferLimit() throws {
        let old = try ServeCommand.parse(["--max-request-bytes", "4096"])
        #expect(try old.serverConfiguration.requestLimits.maxQueryBufferBytes == 4096)
        #expect(try old.serverConfiguration.requestLimits.maxBulkBytes == 4096, "the bulk limit follows, unless given")
        #expect(throws: (any Error).self, "both names at once") {
            _ = try ServeCommand.parse(["--max-request-bytes", "4096", "--client-query-buffer-limit", "8kb"])
        }
    }

    /// Sizes as Redis writes them: k, m, g are powers of 1000; kb, mb, gb of 1024; any case.
    @Test(arguments: [
        ("4096", 4096), ("1k", 1_000), ("1kb", 1024), ("512mb", 512 << 20), ("1GB", 1 << 30), ("2m", 2_000_000),
        ("3g", 3_000_000_000), ("0", 0), ("7b", 7),
    ])
    func sizesTakeRedisUnits(text: String, bytes: Int) {
        #expect(ByteCount(parsing: text)?.bytes == bytes)
    }

    @Test(arguments: ["", "mb", "-1", "1.5mb", "1 mb", "1tb", "99999999999999999999", "9223372036854775807kb"])
    func aSizeThatIsNotOneIsRefused(text: String) {
        #expect(ByteCount(parsing: text) == nil)
    }

    @Test func theOutputLimitTakesRedisFormWithOrWithoutItsClass() {
        let limit = OutputBufferLimit(hardBytes: 256 << 20, softBytes: 64 << 20, softSeconds: 60)
        #expect(OutputBufferLimit(argument: "256mb 64mb 60") == limit)
        #expect(OutputBufferLimit(argument: "normal 256mb 64mb 60") == limit)
        #expect(OutputBufferLimit(argument: "0 0 0") == OutputBufferLimit(hardBytes: 0, softBytes: 0, softSeconds: 0))
        #expect(OutputBufferLimit(argument: "pubsub 32mb 8mb 60") == nil, "only normal clients exist here")
        #expect("\(limit)" == "256mb 64mb 60")
    }

    /// `--requirepass`, `--requirepass-file` (its first line) and `--acl-file` reach the users;
    /// `--protected-mode no` turns protected mode off.
    @Test func passwordsAndUsersReachTheConfiguration() throws {
        let directory = FileManager.default.temporaryDirectory.path
        let passwordFile = "\(directory)/taskid-cli-pass-\(getpid())"
        let aclFile = "\(directory)/taskid-cli-acl-\(getpid())"
        try "from-file\nignored\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        try "user reader on >r +@read\n".write(toFile: aclFile, atomically: true, encoding: .utf8)
        defer {
            try? FileManager.default.removeItem(atPath: passwordFile)
            try? FileManager.default.removeItem(atPath: aclFile)
        }
        let inline = try ServeCommand.parse(["--requirepass", "p1", "--protected-mode", "no"]).serverConfiguration
        #expect(inline.access.authenticate(name: "default", password: ArraySlice("p1".utf8)) != nil)
        #expect(!inline.protectedMode)
        let fromFile = try ServeCommand.parse(["--requirepass-file", passwordFile, "--acl-file", aclFile])
            .serverConfiguration
        #expect(fromFile.access.authenticate(name: "default", password: ArraySlice("from-file".utf8)) != nil)
        #expect(
            fromFile.access.authenticate(name: "reader", password: ArraySlice("r".utf8))?.allowed == [
                "GET", "EXISTS", "DBSIZE", "TASK.PHASE", "TASK.INFO", "TASK.QUEUE",
            ])
        #expect(fromFile.protectedMode)
        #expect(throws: (any Error).self) {
            _ = try ServeCommand.parse(["--requirepass", "a", "--requirepass-file", passwordFile])
        }
        #expect(throws: (any Error).self) { _ = try ServeCommand.parse(["--requirepass", ""]) }
        #expect(throws: (any Error).self) { _ = try ServeCommand.parse(["--acl-file", "/no/such/acl"]) }
        #expect(throws: (any Error).self) { _ = try ServeCommand.parse(["--protected-mode", "maybe"]) }
    }

    @Test func tlsOptionsAreCheckedTogether() throws {
        let certificate = TestTLSFiles.path("server.crt")
        let key = TestTLSFiles.path("server.key")
        let ca = TestTLSFiles.path("ca.crt")
        let base = ["--tls-port", "6390", "--tls-cert-file", certificate, "--tls-key-file", key]
        #expect(try ServeCommand.parse([]).serverConfiguration.tls == nil)
        let plain = try ServeCommand.parse(base).serverConfiguration.tls
        #expect(
            plain?.port == 6390 && plain?.clientAuthentication == TLSClientAuthentication.no && plain?.only == false)
        // With a CA, client certificates are required unless told otherwise (Redis's default).
        #expect(
            try ServeCommand.parse(base + ["--tls-ca-cert-file", ca]).serverConfiguration.tls?.clientAuthentication
                == .yes)
        let optional = try ServeCommand.parse(
            base + ["--tls-ca-cert-file", ca, "--tls-auth-clients", "optional", "--tls-only"])
        #expect(try optional.serverConfiguration.tls?.clientAuthentication == .optional)
        #expect(try optional.serverConfiguration.tls?.only == true)
        func refusal(_ arguments: [String]) -> String {
            do {
                _ = try ServeCommand.parse(arguments)
                return "accepted"
            } catch {
                return ServeCommand.message(for: error)
            }
        }
        #expect(refusal(["--tls-cert-file", certificate]) == "--tls-cert-file needs --tls-port")
        #expect(refusal(["--tls-only"]) == "--tls-only needs --tls-port")
        #expect(refusal(["--tls-port", "6390", "--tls-key-file", key]).hasPrefix("--tls-port needs --tls-cert-file"))
        #expect(
            refusal(["--tls-port", "6390", "--tls-cert-file", certificate]).hasPrefix("--tls-port needs --tls-key-file")
        )
        #expect(
            refusal(base + ["--tls-auth-clients", "yes"]).hasPrefix("--tls-auth-clients yes needs --tls-ca-cert-file"))
        #expect(refusal(base + ["--tls-auth-clients", "maybe"]) != "accepted")
        #expect(refusal(base + ["--port", "6390"]).hasPrefix("--tls-port 6390 is the plain port too"))
        #expect(
            refusal(["--tls-port", "6380", "--tls-cert-file", certificate, "--tls-key-file", key])
                .hasPrefix("--tls-port 6380 is the plain port too"))
        #expect(refusal(base + ["--tls-only", "--port", "7000"]).hasPrefix("--tls-only binds no plain port"))
        #expect(
            refusal(["--tls-port", "-1", "--tls-cert-file", certificate, "--tls-key-file", key]).contains("0...65535"))
        // An encrypted key fails at once, never waiting for a pass phrase on the terminal.
        #expect(
            refusal([
                "--tls-port", "1", "--tls-cert-file", certificate, "--tls-key-file", TestTLSFiles.path("encrypted.key"),
            ])
            .contains("an encrypted key is not supported"))
        #expect(
            refusal(["--tls-port", "70000", "--tls-cert-file", certificate, "--tls-key-file", key]).contains(
                "0...65535"))
        #expect(
            refusal(["--tls-port", "1", "--tls-cert-file", "/no/such.crt", "--tls-key-file", key]).contains(
                "cannot be read"))
        #expect(
            refusal([
                "--tls-port", "1", "--tls-cert-file", certificate, "--tls-key-file", TestTLSFiles.path("client.key"),
            ])
            .contains("not the key of --tls-cert-file"))
        #if Etcd  // without the trait, --etcd is refused first
            #expect(
                refusal(base + ["--tls-only", "--etcd", "http://127.0.0.1:2379", "--cluster-node", "a"])
                    .hasPrefix("--tls-only cannot serve a cluster"))
        #endif
        #expect(refusal(["--etcd-connect-timeout", "5"]) == "--etcd-connect-timeout needs --etcd")
        #expect(refusal(["--wait-for-id"]) == "--wait-for-id needs --etcd")
    }

    @Test func serveIsTheSubcommandOfTheRoot() throws {
        let command = try TaskIDCommand.parseAsRoot(["serve", "--port", "0", "--work", "upstream:localhost:6379"])
        let serve = try #require(command as? ServeCommand)
        #expect(try serve.serverConfiguration.port == 0)
        #expect(try serve.serverConfiguration.work == .upstream(host: "localhost", port: 6379))
    }

    @Test(arguments: [
        (["--loops", "0"], "--loops takes an integer in 1...64, got '0'"),
        (["--port", "65536"], "--port takes an integer in 0...65535, got '65536'"),
        (["--port", "six"], "The value 'six' is invalid for '--port <port>'"),
        (["--debounce-ms", "-1"], "--debounce-ms"),
        (["--timeout-ms", "86400001"], "--timeout-ms takes an integer in 0...86400000, got '86400001'"),
        (["--max-running", "1000001"], "--max-running takes an integer in 0...1000000, got '1000001'"),
        (["--max-clients", "0"], "--max-clients takes an integer in 1...1000000"),
        (["--max-request-bytes", "63"], "--max-request-bytes takes an integer in 64...1073741824"),
        (["--client-query-buffer-limit", "63"], "--client-query-buffer-limit takes an integer in 64..."),
        (
            ["--client-query-buffer-limit", "1zb"],
            "The value '1zb' is invalid for '--client-query-buffer-limit <bytes>'"
        ),
        (["--proto-max-bulk-len", "0"], "--proto-max-bulk-len takes an integer in 1..."),
        (
            ["--proto-max-bulk-len", "2gb"],
            "--proto-max-bulk-len (2gb) is larger than --client-query-buffer-limit (1gb)"
        ),
        (["--client-output-buffer-limit", "1gb 64mb"], "is invalid for '--client-output-buffer-limit"),
        (["--client-output-buffer-limit", "1gb 64mb -1"], "is invalid for '--client-output-buffer-limit"),
        (["--max-arguments", "0"], "--max-arguments takes an integer in 1...2147483647"),
        (["--max-transaction-bytes", "63"], "--max-transaction-bytes takes an integer in 64...4294967295"),
        (["--drain-timeout-ms", "3600001"], "--drain-timeout-ms takes an integer in 0...3600000"),
        (["--upstream-max-connections", "0"], "--upstream-max-connections takes an integer in 1...1000000"),
        (["--work", "nap:5"], "The value 'nap:5' is invalid for '--work <work>'"),
        (["--log-level", "loud"], "The value 'loud' is invalid for '--log-level <log-level>'"),
        (["--bogus", "1"], "Unknown option '--bogus'"),
        (["--port"], "Missing value for '--port <port>'"),
        (["--loops", "-1"], "--loops takes an integer in 1...64, got '-1'"),
        (["--trace-capacity", "100"], "--trace-capacity needs --trace"),
        (
            ["--trace", "/tmp/taskid-cli-trace.json", "--trace-capacity", "-1"],
            "--trace-capacity takes an integer in 1..."
        ),
        (["--trace", ""], "--trace '' cannot be written: the path is empty"),
        (["--trace", "/tmp"], "--trace '/tmp' cannot be written: not a regular file (a directory)"),
        (["--trace", "/dev/full"], "--trace '/dev/full' cannot be written: not a regular file (a character device)"),
        (
            ["--trace", "/no/such/dir/t.json"],
            "--trace '/no/such/dir/t.json' cannot be written: No such file or directory"
        ),
        (["--trace", "/proc/t.json"], "--trace '/proc/t.json' cannot be written: "),
        (["--etcd", "http://127.0.0.1:2379"], "--etcd needs --cluster-node (this node's id)"),
        (["--etcd", "", "--cluster-node", "n"], "give one or more http://HOST:PORT, separated by commas, none empty"),
        (["--etcd", "http://a:1,,http://b:2", "--cluster-node", "n"], "none empty"),
        (
            ["--etcd", "etcd:2379", "--cluster-node", "n"],
            "--etcd 'etcd:2379' cannot be used: the URL must start with http://"
        ),
        (["--etcd", "http://a:1,http://a:1/", "--cluster-node", "n"], "an endpoint is listed twice"),
        (
            ["--etcd", "http://a:1/v3", "--cluster-node", "n"],
            "give the base URL, without a path: etcd's API is at its root"
        ),
        (
            ["--etcd", "http://a:1", "--cluster-node", "n", "--etcd-lease-seconds", "0"],
            "--etcd-lease-seconds takes an integer in 1...60, got '0'"
        ),
        (["--etcd", "http://a:1", "--cluster-node", "n", "--etcd-cluster", "a/b"], "1 to 64 letters, digits"),
        (["--etcd-lease-seconds", "5"], "--etcd-lease-seconds and --etcd-cluster need --etcd"),
        (
            ["--etcd", "http://a:1", "--cluster-node", "n", "--host", "0.0.0.0"],
            "not an address clients can be sent to"
        ),
        (["--etcd", "http://a:1", "--cluster-node", "n/1"], "--cluster-node 'n/1' is not 1 to 40 letters"),
        (
            ["--otlp-endpoint", "localhost:4318"],
            "--otlp-endpoint 'localhost:4318' cannot be used: the URL must start with http:// or https://"
        ),
        (["--otlp-endpoint", "ftp://h:1"], "the URL must start with http:// or https://"),
        (["--otlp-endpoint", "http://"], "--otlp-endpoint 'http://' cannot be used: the host is empty"),
        (["--otlp-endpoint", "http://h:0"], "the port must be a number in 1...65535"),
        (["--otlp-endpoint", "http://h:+4318"], "the port must be a number in 1...65535"),
        (["--otlp-endpoint", "http://h:65536"], "the port must be a number in 1...65535"),
        (["--otlp-endpoint", "http://no.such.host!:4318"], "the host may hold letters, digits"),
        (["--otlp-endpoint", "http://[::1:4318"], "an IPv6 address needs its closing ]"),
        (
            ["--otlp-endpoint", "http://h:4318/v1/traces"],
            "give the base URL, without a path: spans go to <URL>/v1/traces"
        ),
        (
            ["--otlp-endpoint", "http://h\u{1B}[31m:1"],
            "'http://h\\u{1B}[31m:1' cannot be used: spaces and control characters"
        ),
    ])
    func badOptionsAreValidationErrors(arguments: [String], message: String) {
        let error = #expect(throws: (any Error).self) { try ServeCommand.parse(arguments) }
        guard let error else { return }
        #expect(ServeCommand.exitCode(for: error) == .validationFailure, "exit 64 for \(arguments)")
        #expect(ServeCommand.message(for: error).contains(message), "\(ServeCommand.message(for: error))")
    }

    @Test func aTraceFileThatCanBeWrittenIsAcceptedAndNotLeftBehind() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("taskid-cli-\(getpid()).json").path
        let command = try ServeCommand.parse(["--trace", path, "--trace-capacity", "64"])
        #expect(try command.serverConfiguration.tracePath == path)
        #expect(try command.serverConfiguration.traceCapacity == 64)
        #expect(!FileManager.default.fileExists(atPath: path), "the check creates no file that stays")
    }

    @Test func theOTLPEndpointComesFromTheOptionOrTheEnvironment() throws {
        func endpoint(_ option: String?, _ environment: [String: String]) throws -> String? {
            try OTLPEndpoint.configured(option: option, environment: environment)?.tracesURL
        }
        #expect(try endpoint(nil, [:]) == nil, "no export unless asked")
        #expect(try endpoint("http://127.0.0.1:4318", [:]) == "http://127.0.0.1:4318/v1/traces")
        #expect(try endpoint("https://[::1]:4318/", [:]) == "https://[::1]:4318/v1/traces")
        #expect(
            try endpoint("http://a:1", ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:2"]) == "http://a:1/v1/traces",
            "the option wins")
        #expect(try endpoint(nil, ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:2"]) == "http://b:2/v1/traces")
        #expect(
            try endpoint(nil, ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:3/custom/path"])
                == "http://c:3/custom/path")
        #expect(
            try endpoint(nil, ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:2", "OTEL_TRACES_EXPORTER": "none"]) == nil)
        #expect(throws: OTLPEndpointError.self) {
            try endpoint(nil, ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:2", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"])
        }
        #expect(throws: OTLPEndpointError.self) { try endpoint(nil, ["OTEL_EXPORTER_OTLP_ENDPOINT": "b:2"]) }
        #if OTLP
            let command = try ServeCommand.parse(["--otlp-endpoint", "http://127.0.0.1:4318"])
            #expect(command.otlpEndpoint == "http://127.0.0.1:4318")
        #else
            let refused = #expect(throws: (any Error).self) {
                try ServeCommand.parse(["--otlp-endpoint", "http://127.0.0.1:4318"])
            }
            #expect(
                refused.map { ServeCommand.message(for: $0) }?.contains("needs taskid built with its OTLP trait")
                    == true)
        #endif
    }

    #if Etcd
        @Test func etcdSettingsReachTheConfiguration() throws {
            let command = try ServeCommand.parse([
                "--etcd", "http://127.0.0.1:2379,http://[::1]:2380/", "--cluster-node", "n1", "--etcd-lease-seconds",
                "5", "--etcd-cluster", "prod.eu", "--port", "7001",
            ])
            let configuration = try command.serverConfiguration
            #expect(configuration.etcd?.endpoints == ["http://127.0.0.1:2379", "http://[::1]:2380"])
            #expect(configuration.etcd?.leaseSeconds == 5)
            #expect(configuration.etcd?.prefix == "/taskid/prod.eu/")
            let cluster = try #require(configuration.cluster)
            #expect(cluster.myself == ClusterNode(id: "n1", host: "127.0.0.1", port: 7001, slotRanges: []))
            #expect(cluster.owner(ofSlot: 0) == nil, "nothing served before etcd answers")
        }
    #else
        @Test func etcdIsRefusedWithoutItsTrait() {
            let error = #expect(throws: (any Error).self) {
                try ServeCommand.parse(["--etcd", "http://127.0.0.1:2379", "--cluster-node", "n1"])
            }
            #expect(
                error.map { ServeCommand.message(for: $0) }?.contains("needs taskid built with its Etcd trait") == true)
        }
    #endif

    @Test func aDanglingSymbolicLinkIsRefusedAndLeftAlone() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("taskid-link-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let link = directory + "/trace.json"
        #expect(symlink(directory + "/missing.json", link) == 0)
        let error = #expect(throws: (any Error).self) { try ServeCommand.parse(["--trace", link]) }
        #expect(
            error.map { ServeCommand.message(for: $0) }?.contains("a symbolic link to a file that does not exist")
                == true)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory) == ["trace.json"],
            "nothing created, the link kept")
    }

    @Test func theEnvironmentTurnsTheExportOffOrIsRefused() throws {
        #expect(
            try OTLPEndpoint.configured(
                option: nil, environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:2", "OTEL_SDK_DISABLED": "true"])
                == nil)
        #expect(OTLPEndpoint.decidingVariables.contains("OTEL_TRACES_EXPORTER"), "never handed to swift-otel")
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("taskid-fifo-\(getpid())").path
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        let error = #expect(throws: (any Error).self) { try ServeCommand.parse(["--trace", path]) }
        #expect(
            error.map { ServeCommand.message(for: $0) }
                == "--trace '\(path)' cannot be written: not a regular file (a FIFO)")
    }

    @Test func anUnknownCommandOrNoCommandIsBadUsage() async throws {
        let unknown = #expect(throws: (any Error).self) { try TaskIDCommand.parseAsRoot(["frob"]) }
        #expect(unknown.map { TaskIDCommand.exitCode(for: $0) } == .validationFailure)

        let bare = try #require(try TaskIDCommand.parseAsRoot([]) as? TaskIDCommand)
        let missing = await #expect(throws: ValidationError.self) { try await bare.run() }
        #expect(missing?.message == "missing command")
    }

    @Test func versionFlagAsksForTheVersionConstant() {
        let error = #expect(throws: (any Error).self) { try TaskIDCommand.parseAsRoot(["--version"]) }
        guard let error else { return }
        #expect(TaskIDCommand.exitCode(for: error) == .success)
        #expect(TaskIDCommand.fullMessage(for: error) == taskidVersion)
        #expect(taskidVersion == "0.12.0")
    }
}

@Suite("taskid serve's reference")
struct ServeReferenceTests {
    /// docs/SERVER.md, found from this file's place in the repository.
    static func serverReference() throws -> String {
        let testsDirectory = URL(fileURLWithPath: "\(#filePath)").deletingLastPathComponent()
        let root = testsDirectory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("docs/SERVER.md"), encoding: .utf8)
    }

    @Test func everyOptionOfServeHelpIsInTheServerReference() throws {
        let help = ServeCommand.helpMessage(columns: 200)
        let options = Set(
            help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," || $0 == "=" })
                .filter {
                    $0.hasPrefix("--") && $0.count > 2 && $0.dropFirst(2).allSatisfy { $0.isLetter || $0 == "-" }
                }
                .map(String.init))
        #expect(options.count > 40)  // the parse found the option list, not nothing
        let reference = try Self.serverReference()
        let missing = options.filter { !reference.contains("`\($0)") && $0 != "--help" && $0 != "--version" }
        #expect(missing.isEmpty, "options of `taskid serve --help` missing from docs/SERVER.md: \(missing.sorted())")
    }
}
