import ArgumentParser

/// `taskid-bench`: the benchmark driver of docs/BENCHMARKS.md.
struct TaskIDBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "taskid-bench",
        abstract: "TaskIdentity benchmarks: one key=value line (or JSON) per run.",
        subcommands: [
            ChurnBench.self, ScrollBench.self, LatencyBench.self, FootprintBench.self, ServerLoadBench.self,
            ExecutorBench.self, TimerBench.self, ObservedBench.self, TypeaheadScenario.self, GrowthBench.self,
            BackendBench.self, SharedBench.self, FairnessBench.self,
        ])
}

TaskIDBench.main()
