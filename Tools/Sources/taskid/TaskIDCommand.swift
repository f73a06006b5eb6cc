import ArgumentParser
import TaskidServer

/// `taskid`: the TaskIdentity command-line tool. `taskid serve` puts a task registry behind a
/// RESP2 (Redis protocol) server, so redis-cli, redis-benchmark and load-testing scripts can
/// drive it; `taskid replay` replays a recorded trace with other settings, in virtual time.
///
/// Bad usage (an unknown command or option, a value out of range) exits 64, ArgumentParser's
/// validation failure; a server that cannot start exits 1; a graceful shutdown exits 0.
/// Parsed and run on the main task.
@main
struct TaskIDCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taskid",
        abstract: "The TaskIdentity command-line tool.",
        version: taskidVersion,
        subcommands: [ServeCommand.self, ReplayCommand.self]
    )

    /// `taskid` with no command is bad usage, as it always was (rather than help and exit 0).
    func run() async throws {
        throw ValidationError("missing command")
    }
}
