import ArgumentParser

/// `taskid serve`'s options for how runs wait and end: a debounce's bound and the grace period
/// of a stop. Parsed on the main task; a value type, any thread.
struct RunControlOptions: ParsableArguments {
    @Option(
        name: .customLong("max-wait-ms"), parsing: .unconditional,
        help: "The longest a debounce window that keeps re-opening stays open, in milliseconds (0: no bound).")
    var maxWaitMilliseconds = 0

    @Option(
        name: .customLong("shutdown-grace-ms"), parsing: .unconditional,
        help: """
            On SIGTERM, how long runs under way may take to finish before they are cancelled, in \
            milliseconds (0: cancelled at once). No run starts meanwhile.
            """)
    var shutdownGraceMilliseconds = 0
}
