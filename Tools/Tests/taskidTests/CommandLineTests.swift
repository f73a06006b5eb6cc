import ArgumentParser
import Foundation
import Testing

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
            "--max-clients", "5", "--max-request-bytes", "4096", "--log-level", "debug", "--max-arguments", "77",
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
        expected.requestLimits = RESPLimits(maxRequestBytes: 4096, maxArguments: 77)
        expected.drainTimeoutMilliseconds = 250
        expected.upstreamConnectTimeoutMilliseconds = 11
        expected.upstreamReplyTimeoutMilliseconds = 12
        expected.upstreamMaxConnections = 13
        expected.maxTransactionBytes = 1000
        #expect(try command.serverConfiguration == expected)
        #expect(command.logLevel.level == .debug)
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
