import ArgumentParser
import Foundation
import Histogram
import TaskIdentity
import UVLoop

/// W5: latency under a steady offered rate. Changes are issued on an open-loop schedule (the
/// i-th at start + i/rate), and latency is measured from each change's *intended* time, so a
/// stalled producer shows up as latency instead of hiding it (coordinated omission).
struct LatencyBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "latency",
        abstract: "Latency (W5): identity change to the new action's first line; debounce firing accuracy.")

    @Option(help: "Offered identity changes per second.") var rate = 100_000
    @Option(help: "Duration of the run.") var seconds = 10
    @Option(help: "Number of slots.") var slots = 10_000
    @Option(name: .customLong("debounce-ms"), help: "Also measure debounced tasks firing after this window.")
    var debounceMilliseconds = 50
    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard rate > 0, seconds > 0, slots > 0, debounceMilliseconds >= 0 else {
            throw ValidationError("--rate, --seconds and --slots must be positive, --debounce-ms not negative")
        }
    }

    func run() throws {
        for implementation in common.impl.expanded {
            let restart = LatencyRecorder()
            let debounced = LatencyRecorder()
            let measurement = Measurement()
            switch implementation {
            case .registry: try runRegistry(restart, debounced)
            case .naiveTasks: try runNaive(restart, debounced)
            case .all, .bareTasks: throw ValidationError("--impl bare-tasks is a churn baseline")
            }
            var report = RunReport()
            report.add("impl", implementation.rawValue)
            report.add("workload", "latency")
            report.add("rate", rate)
            report.add("seconds", seconds)
            report.add("slots", slots)
            report.add("debounce_ms", debounceMilliseconds)
            report.add("changes", rate * seconds)
            for (name, value) in restart.percentiles(prefix: "restart") { report.add(name, value) }
            for (name, value) in debounced.percentiles(prefix: "debounce_late") { report.add(name, value) }
            report.add("cpu_s", measurement.cpuSeconds, decimals: 2)
            report.add("rss_mib", peakResidentMiB(), decimals: 1)
            print(report.line(json: common.json))
            fflush(nil)
        }
    }

    /// Half the changes restart at once, half go to debounced tasks; both on the loop thread.
    private func runRegistry(_ restart: LatencyRecorder, _ debounced: LatencyRecorder) throws {
        let loop = UVLoop(name: "latency")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let registry = TaskRegistry<Int>(loop: loop)
        try common.tracing.start([registry], on: [loop])
        let (rate, total, slots) = (self.rate, self.rate * self.seconds, self.slots)
        let debounce = Duration.milliseconds(debounceMilliseconds)
        let debounceNanoseconds = UInt64(debounceMilliseconds) * 1_000_000
        try runOnLoop(loop) { done in
            let start = monotonicNanoseconds()
            let issued = LoopLocal(0)
            let generations = LoopLocal([UInt64](repeating: 0, count: slots))
            let progress = LoopLocal(ProgressLine(label: "latency registry"))
            let streamBox = LoopLocal(IdentityStream())
            let tick = TimerBox()
            tick.timer = try! loop.makeUVTimer {
                let now = monotonicNanoseconds()
                let due = min(total, Int(Double(now - start) * Double(rate) / 1e9))
                while issued.value < due {
                    let index = issued.value
                    let intended = start + UInt64(Double(index) * 1e9 / Double(rate))
                    let slot = streamBox.value.nextSlot(slots)
                    generations.value[slot] &+= 1
                    let generation = generations.value[slot]
                    if slot % 2 == 0 {
                        try! registry.task(slot, id: generation) { _ in
                            restart.record(nanoseconds: monotonicNanoseconds() &- intended)
                        }
                    } else {
                        try! registry.task(slot, id: generation, debounce: debounce) { _ in
                            let late = Int64(bitPattern: monotonicNanoseconds() &- (intended &+ debounceNanoseconds))
                            debounced.record(nanoseconds: UInt64(max(0, late)))
                        }
                    }
                    issued.value += 1
                }
                progress.value.update(done: issued.value, of: total)
                if issued.value < total {
                    // Every turn, not every millisecond (libuv's timer resolution): a pacing
                    // loop, like the baseline's pacing thread, so changes leave on schedule.
                    try! tick.timer!.start(after: .zero)
                } else {
                    tick.timer!.close()
                    tick.timer = nil
                    progress.value.finish()
                    awaitQuiescence(registry, loop, done)
                }
            }
            try! tick.timer!.start(after: .zero)
        }
        try common.tracing.write([registry], on: [loop])
        try blockOn { await registry.shutdown() }
    }

    /// The same schedule from a pacing thread; actions are tasks on the global executor.
    private func runNaive(_ restart: LatencyRecorder, _ debounced: LatencyRecorder) throws {
        let (rate, total, slots) = (self.rate, self.rate * self.seconds, self.slots)
        let debounce = Duration.milliseconds(debounceMilliseconds)
        let debounceNanoseconds = UInt64(debounceMilliseconds) * 1_000_000
        let live = LiveTasks()
        var tasks = [Task<Void, Never>?](repeating: nil, count: slots)
        var stream = IdentityStream()
        var progress = ProgressLine(label: "latency naive-tasks")
        let start = monotonicNanoseconds()
        var issued = 0
        while issued < total {
            let now = monotonicNanoseconds()
            let due = min(total, Int(Double(now - start) * Double(rate) / 1e9))
            if issued == due {
                usleep(50)
                continue
            }
            while issued < due {
                let intended = start + UInt64(Double(issued) * 1e9 / Double(rate))
                let slot = stream.nextSlot(slots)
                tasks[slot]?.cancel()
                live.started()
                if slot % 2 == 0 {
                    tasks[slot] = Task {
                        defer { live.ended() }
                        guard !Task.isCancelled else { return }
                        restart.record(nanoseconds: monotonicNanoseconds() &- intended)
                    }
                } else {
                    tasks[slot] = Task {
                        defer { live.ended() }
                        do { try await Task.sleep(for: debounce) } catch { return }
                        guard !Task.isCancelled else { return }
                        let late = Int64(bitPattern: monotonicNanoseconds() &- (intended &+ debounceNanoseconds))
                        debounced.record(nanoseconds: UInt64(max(0, late)))
                    }
                }
                issued += 1
            }
            progress.update(done: issued, of: total)
        }
        progress.finish()
        while live.count > 0 { usleep(1000) }
    }
}

/// An HDR histogram of latencies in microseconds, safe to record into from any thread.
final class LatencyRecorder: @unchecked Sendable {
    // @unchecked Sendable: `histogram` is reached only under `lock`.
    private let lock = NSLock()
    private var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return Int(histogram.totalCount)
    }

    func record(nanoseconds: UInt64) {
        lock.lock()
        _ = histogram.record(min(nanoseconds / 1000, 60_000_000))
        lock.unlock()
    }

    func percentiles(prefix: String) -> [(String, Int)] {
        lock.lock()
        defer { lock.unlock() }
        return [
            ("\(prefix)_count", Int(histogram.totalCount)),
            ("\(prefix)_p50_us", Int(histogram.valueAtPercentile(50))),
            ("\(prefix)_p99_us", Int(histogram.valueAtPercentile(99))),
            ("\(prefix)_p999_us", Int(histogram.valueAtPercentile(99.9))),
            ("\(prefix)_max_us", Int(histogram.max)),
        ]
    }
}
