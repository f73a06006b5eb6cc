import ArgumentParser
import Foundation
import TaskIdentity
import UVLoop

/// W6: memory of many live slots, each with a waiting (debounced) task.
struct FootprintBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "footprint", abstract: "Footprint (W6): bytes per live slot with a waiting debounced task.")

    @Option(help: "Live slots.") var slots = 1_000_000
    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard slots > 0 else { throw ValidationError("--slots must be positive") }
    }

    func run() throws {
        var failures: [String] = []
        for implementation in common.impl.expanded {
            let before = residentMiB()
            var after = 0.0
            var leftBehind = 0
            let measurement = Measurement()
            switch implementation {
            case .registry: (after, leftBehind) = try runRegistry()
            case .naiveTasks: (after, leftBehind) = try runNaive()
            case .all, .bareTasks: throw ValidationError("--impl bare-tasks is a churn baseline")
            }
            let bytesPerSlot = (after - before) * 1_048_576 / Double(slots)
            var report = RunReport()
            report.add("impl", implementation.rawValue)
            report.add("workload", "footprint")
            report.add("slots", slots)
            report.add("seconds", measurement.seconds, decimals: 4)
            report.add("rss_before_mib", before, decimals: 1)
            report.add("rss_mib", after, decimals: 1)
            report.add("bytes_per_slot", Int(bytesPerSlot))
            report.add("left_behind", leftBehind)
            print(report.line(json: common.json))
            fflush(nil)
            if leftBehind != 0 { failures.append("\(implementation.rawValue): left_behind=\(leftBehind)") }
        }
        if !failures.isEmpty { throw CorrectnessFailure(description: failures.joined(separator: "; ")) }
    }

    /// Declares every slot with a long debounce (so each task waits), measures, shuts down.
    private func runRegistry() throws -> (Double, Int) {
        let loop = UVLoop(name: "footprint")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let registry = TaskRegistry<Int>(loop: loop)
        try common.tracing.start([registry], on: [loop])
        let count = slots
        try blockOn {
            try await loop.submit {
                for slot in 0..<count {
                    // A non-capturing action: the measurement is of the registry, not of closures.
                    try registry.task(slot, id: 1, debounce: .seconds(3600)) { _ in }
                }
            }
        }
        let after = residentMiB()
        let waiting = try blockOn { try await loop.submit { try registry.counters.liveGenerations } }
        try common.tracing.write([registry], on: [loop])
        try blockOn { await registry.shutdown() }
        let counters = try blockOn { try await loop.submit { try registry.counters } }
        let leftBehind = (waiting == count ? 0 : 1) + counters.runningActions + counters.liveSlots
        return (after, leftBehind)
    }

    /// A table of tasks, each sleeping for the same long debounce.
    private func runNaive() throws -> (Double, Int) {
        let count = slots
        let live = LiveTasks()
        let table = LoopLocal<[Task<Void, Never>]>([])
        try blockOn {
            table.value.reserveCapacity(count)
            for _ in 0..<count {
                live.started()
                table.value.append(
                    Task {
                        defer { live.ended() }
                        try? await Task.sleep(for: .seconds(3600))
                    })
            }
            while live.count < count { await Task.yield() }
        }
        // Let the tasks reach their sleep before measuring.
        usleep(200_000)
        let after = residentMiB()
        try blockOn {
            for task in table.value { task.cancel() }
            for task in table.value { await task.value }
        }
        table.value = []
        return (after, live.count)
    }
}
