import ArgumentParser
import Foundation
import TaskIdentity

/// `taskid replay TRACE.json`: a recorded trace's declarations, declared again in virtual time
/// under the recorded settings and under new ones, side by side with the trace itself
/// (`TraceReplay`; docs/REPLAY.md). Parsed and run on the main task; the replays block it.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a recorded trace with other settings, in virtual time.",
        discussion: """
            Reads a trace in Trace Event JSON (taskid serve --trace FILE, TASK.TRACE DUMP, or a \
            registry's RegistryTrace.json()), declares its keys and identities at their recorded \
            times on a test loop, and prints the backend calls, the wasted ones, the time to each \
            answer and the most runs at once: for the trace as it ran, replayed with the settings it \
            shows, and replayed with the options given. Exit 0; 64 for bad usage; 65 for a file that \
            is not such a trace; 66 for a file that cannot be read.
            """)

    @Argument(help: "The trace, in Trace Event JSON.")
    var trace: String

    @Option(name: .customLong("debounce"), help: "The new debounce, in milliseconds (default: the trace's).")
    var debounceMilliseconds: Int?

    @Option(name: .customLong("throttle"), help: "The new throttle, in milliseconds (default: the trace's).")
    var throttleMilliseconds: Int?

    @Option(
        name: .customLong("max-wait"),
        help: "The new bound on a debounce window that keeps re-opening, in milliseconds (0: none, the default).")
    var maxWaitMilliseconds: Int?

    @Option(name: .customLong("limit"), help: "The most runs at once (0: no limit; default: the trace's).")
    var limit: Int?

    @Option(
        name: .customLong("backend-ms"),
        help: "Each run's backend time: a number of milliseconds, or 'trace' for the trace's own run durations.")
    var backend = "trace"

    @Flag(name: .customLong("json"), help: "Print the figures as one JSON object instead of a table.")
    var json = false

    func validate() throws {
        if let debounceMilliseconds { try checkOption("--debounce", debounceMilliseconds, in: 0...86_400_000) }
        if let throttleMilliseconds { try checkOption("--throttle", throttleMilliseconds, in: 0...86_400_000) }
        if let maxWaitMilliseconds { try checkOption("--max-wait", maxWaitMilliseconds, in: 0...86_400_000) }
        if let limit { try checkOption("--limit", limit, in: 0...10_000_000) }
        _ = try backendChoice()
    }

    private func backendChoice() throws -> TraceReplay.Backend {
        if backend == "trace" { return .recorded }
        guard let milliseconds = Int(backend), (0...86_400_000).contains(milliseconds) else {
            throw ValidationError("--backend-ms takes 'trace' or an integer in 0...86400000, got '\(backend)'")
        }
        return .fixed(.milliseconds(milliseconds))
    }

    func run() throws {
        let clock = ContinuousClock()
        let began = clock.now
        guard let data = FileManager.default.contents(atPath: trace) else {
            printError("taskid replay: cannot read \(trace)")
            throw ExitCode(66)
        }
        // Bytes that are not UTF-8 read as U+FFFD: such a file is refused as not a trace (65).
        let text = String(decoding: data, as: UTF8.self)
        let replay: TraceReplay
        do {
            replay = try TraceReplay(json: text)
        } catch {
            printError("taskid replay: \(trace) is not a trace: \(error)")
            throw ExitCode(65)
        }
        var settings = replay.recordedSettings
        settings.backend = try backendChoice()
        var recordedSettings = replay.recordedSettings
        recordedSettings.backend = .recorded
        if let debounceMilliseconds { settings.debounce = .milliseconds(debounceMilliseconds) }
        if let throttleMilliseconds { settings.throttle = .milliseconds(throttleMilliseconds) }
        if let maxWaitMilliseconds {
            settings.maxWait = maxWaitMilliseconds == 0 ? nil : .milliseconds(maxWaitMilliseconds)
        }
        if let limit { settings.maxRunning = limit == 0 ? nil : limit }
        let asRecorded = try replay.replay(with: recordedSettings)
        let asNew = try replay.replay(with: settings)
        let elapsed = clock.now - began
        let report = ReplayReport(
            file: trace, replay: replay, recordedSettings: recordedSettings, newSettings: settings,
            asRecorded: asRecorded, asNew: asNew, elapsed: elapsed)
        print(json ? report.json() : report.table(), terminator: "")
    }
}

/// Writes `message` and a newline to standard error. Any thread.
private func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}
