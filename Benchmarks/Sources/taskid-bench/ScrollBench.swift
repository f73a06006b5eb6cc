import ArgumentParser
import Foundation
import TaskIdentity
import UVLoop

/// W3: a list scrolled past. Each step removes the slot that left the window and declares the
/// one that entered it, whose action loads for `--load-ms`.
struct ScrollBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scroll",
        abstract: "Scrolling (W3): slots appear and disappear; every load is run or cancelled, none left behind.")

    @Option(help: "Visible items (live slots).") var window = 1_000
    @Option(help: "Items scrolled past (steps).") var items = 1_000_000
    @Option(name: .customLong("load-ms"), help: "How long an item's load takes.") var loadMilliseconds = 20
    @Option(help: "Steps per loop turn.") var batch = 1_000
    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard window > 0, items > 0, batch > 0, loadMilliseconds >= 0 else {
            throw ValidationError("--window, --items and --batch must be positive, --load-ms not negative")
        }
    }

    func run() throws {
        var failures: [String] = []
        for implementation in common.impl.expanded {
            let result = LoopLocal((loaded: 0, leftBehind: 0))
            let measurement = Measurement()
            switch implementation {
            case .registry: try runRegistry(result)
            case .naiveTasks: try runNaive(result)
            case .all, .bareTasks: throw ValidationError("--impl bare-tasks is a churn baseline")
            }
            let seconds = measurement.seconds
            var report = RunReport()
            report.add("impl", implementation.rawValue)
            report.add("workload", "scroll")
            report.add("window", window)
            report.add("items", items)
            report.add("load_ms", loadMilliseconds)
            report.add("batch", batch)
            report.add("seconds", seconds, decimals: 4)
            report.add("steps_per_s", Int(Double(items) / seconds))
            report.add("loads_completed", result.value.loaded)
            report.add("left_behind", result.value.leftBehind)
            report.add("cpu_s", measurement.cpuSeconds, decimals: 2)
            report.add("rss_mib", peakResidentMiB(), decimals: 1)
            print(report.line(json: common.json))
            fflush(nil)
            if result.value.leftBehind != 0 {
                failures.append("\(implementation.rawValue): left_behind=\(result.value.leftBehind)")
            }
            if result.value.loaded < min(window, items) {
                failures.append("\(implementation.rawValue): the last window did not load (\(result.value.loaded))")
            }
        }
        if !failures.isEmpty { throw CorrectnessFailure(description: failures.joined(separator: "; ")) }
    }

    private func runRegistry(_ result: LoopLocal<(loaded: Int, leftBehind: Int)>) throws {
        let loop = UVLoop(name: "scroll")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let registry = TaskRegistry<Int>(loop: loop)
        try common.tracing.start([registry], on: [loop])
        let (window, items, batch, load) = (
            self.window, self.items, self.batch, Duration.milliseconds(loadMilliseconds)
        )
        // One template for every item: a step allocates nothing for its declaration.
        let item = try TaskTemplate<Int> { _, context in
            try await context.clock.sleep(for: load)
            context.commit { result.value.loaded += 1 }
        }
        try runOnLoop(loop) { done in
            let step = LoopLocal(0)
            let progress = LoopLocal(ProgressLine(label: "scroll registry"))
            let turn = TimerBox()
            turn.timer = try! loop.makeUVTimer {
                let end = min(step.value + batch, items)
                while step.value < end {
                    let index = step.value
                    if index >= window { try! registry.remove(index - window) }
                    try! registry.task(index, template: item)
                    step.value += 1
                }
                progress.value.update(done: step.value, of: items)
                if step.value < items {
                    try! turn.timer!.start(after: .zero)
                    return
                }
                turn.timer!.close()
                turn.timer = nil
                progress.value.finish()
                // The list stops: the last window loads, then the view goes away.
                pollOnLoop(
                    loop,
                    until: {
                        let counters = try! registry.counters;
                        return counters.liveGenerations == 0 && counters.runningActions == 0
                    }
                ) {
                    for item in max(0, items - window)..<items { try! registry.remove(item) }
                    done()
                }
            }
            try! turn.timer!.start(after: .zero)
        }
        try common.tracing.write([registry], on: [loop])
        try blockOn { await registry.shutdown() }
        let counters = try blockOn { try await loop.submit { try registry.counters } }
        result.value.leftBehind = counters.runningActions + counters.liveSlots + counters.liveGenerations
    }

    private func runNaive(_ result: LoopLocal<(loaded: Int, leftBehind: Int)>) throws {
        let (window, items, batch, load) = (
            self.window, self.items, self.batch, Duration.milliseconds(loadMilliseconds)
        )
        let live = LiveTasks()
        let loaded = NaiveCounter()
        try blockOn {
            var tasks: [Int: Task<Void, Never>] = [:]
            var progress = ProgressLine(label: "scroll naive-tasks")
            var item = 0
            while item < items {
                let end = min(item + batch, items)
                while item < end {
                    if item >= window { tasks.removeValue(forKey: item - window)?.cancel() }
                    live.started()
                    tasks[item] = Task {
                        defer { live.ended() }
                        do { try await Task.sleep(for: load) } catch { return }
                        guard !Task.isCancelled else { return }
                        loaded.increment()
                    }
                    item += 1
                }
                progress.update(done: item, of: items)
                await Task.yield()
            }
            progress.finish()
            for task in tasks.values { await task.value }
            for task in tasks.values { task.cancel() }
            tasks = [:]
            // Cancelled loads end on their own; wait for them the way a careful caller would.
            var spins = 0
            while live.count > 0 && spins < 100_000 {
                await Task.yield()
                spins += 1
            }
        }
        result.value.loaded = loaded.value
        result.value.leftBehind = live.count
    }
}

/// A counter the naive baseline's tasks bump from any thread.
final class NaiveCounter: @unchecked Sendable {
    // @unchecked Sendable: `count` is reached only under `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }
    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}
