import ArgumentParser
import TaskidServer

/// `taskid serve`'s options for how runs wait and end: a debounce's bound, the bound of the
/// `--max-running` queue and what it sheds, and the grace period of a stop. Parsed on the main
/// task; a value type, any thread.
struct RunControlOptions: ParsableArguments {
    @Option(
        name: .customLong("max-wait-ms"), parsing: .unconditional,
        help: "The longest a debounce window that keeps re-opening stays open, in milliseconds (0: no bound).")
    var maxWaitMilliseconds = 0

    @Option(
        name: .customLong("max-queued"), parsing: .unconditional,
        help: """
            With --max-running: how many SETs may wait for a place on each loop (-1: no bound). A \
            SET that finds the queue full sheds one (--shed); a shed key's TASK.PHASE answers \
            cancelled(shed), its run never happens, and INFO and TASK.QUEUE count it.
            """)
    var maxQueued = -1

    @Option(
        name: .customLong("shed"), parsing: .unconditional,
        help: "What a full --max-queued queue sheds: oldest (the SET that has waited longest) or newest (itself).")
    var shed = "oldest"

    @Option(
        name: .customLong("shutdown-grace-ms"), parsing: .unconditional,
        help: """
            On SIGTERM, how long runs under way may take to finish before they are cancelled, in \
            milliseconds (0: cancelled at once). No run starts meanwhile.
            """)
    var shutdownGraceMilliseconds = 0

    /// Checks each option's range, then sets them in `configuration`. `maxRunning`: the
    /// `--max-running` given, which `--max-queued` and `--shed` need.
    func apply(to configuration: inout ServerConfiguration, maxRunning: Int) throws {
        if maxRunning == 0 && (maxQueued >= 0 || shed != "oldest") {
            throw ValidationError("--max-queued and --shed bound the queue of --max-running: give --max-running too")
        }
        try checkOption("--max-wait-ms", maxWaitMilliseconds, in: 0...86_400_000)
        try checkOption("--shutdown-grace-ms", shutdownGraceMilliseconds, in: 0...86_400_000)
        try checkOption("--max-queued", maxQueued, in: -1...10_000_000)
        guard shed == "oldest" || shed == "newest" else {
            throw ValidationError("--shed takes oldest or newest, got '\(shed)'")
        }
        configuration.maxWaitMilliseconds = maxWaitMilliseconds
        configuration.shutdownGraceMilliseconds = shutdownGraceMilliseconds
        configuration.maxQueued = maxQueued < 0 ? nil : maxQueued
        configuration.shedsNewest = shed == "newest"
    }
}

/// Refuses an integer option out of `range`, naming the option and its range. Any thread.
func checkOption(_ option: String, _ value: Int, in range: ClosedRange<Int>) throws {
    guard range.contains(value) else {
        throw ValidationError("\(option) takes an integer in \(range.lowerBound)...\(range.upperBound), got '\(value)'")
    }
}
