import ArgumentParser
import Dispatch
import Foundation
import UVLoop

/// Jobs per second through the loop executor (on-loop and cross-thread) against the default
/// global executor, measured in one run.
struct ExecutorBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "executor", abstract: "Jobs per second: UVLoop executor vs the default global executor.")

    @Option(help: "Jobs per measurement.") var jobs = 1_000_000
    @Option(help: "Repetitions; the median is reported.") var repeats = 5
    @Flag(help: "Print JSON instead of key=value lines.") var json = false

    func validate() throws {
        guard jobs > 0, repeats > 0 else { throw ValidationError("--jobs and --repeats must be positive") }
    }

    func run() throws {
        let loop = UVLoop(name: "bench")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let count = jobs

        // On-loop: one task yields `count` times; every resumption is a job enqueued from the
        // loop thread onto its local queue. The global executor does the same on its pool.
        report("on-loop-yield", "uvloop") {
            try blockOn { await Task(executorPreference: loop) { for _ in 0..<count { await Task.yield() } }.value }
        }
        report("on-loop-yield", "global") {
            try blockOn { await Task.detached { for _ in 0..<count { await Task.yield() } }.value }
        }
        // On-loop task creation: the loop thread creates `count` tasks preferring the loop, in
        // batches of 1,000 per turn; each runs one job and ends. This is the floor for a
        // registry that creates one Swift task per started action.
        report("on-loop-tasks", "uvloop") {
            let counter = LoopCounter(target: count)
            try runOnLoop(loop) { done in
                let remaining = LoopLocal(count)
                let turn = TimerBox()
                turn.timer = try! loop.makeUVTimer {
                    for _ in 0..<min(1000, remaining.value) { Task(executorPreference: loop) { counter.increment() } }
                    remaining.value -= min(1000, remaining.value)
                    if remaining.value > 0 { try! turn.timer!.start(after: .zero) } else { turn.timer = nil; done() }
                }
                try! turn.timer!.start(after: .zero)
            }
            counter.wait()
        }
        // Cross-thread: this (non-loop) thread creates `count` tasks whose first job is enqueued
        // onto the executor from here; timing ends when the last has run.
        report("cross-thread-tasks", "uvloop") {
            let counter = LoopCounter(target: count)
            for _ in 0..<count { Task(executorPreference: loop) { counter.increment() } }
            counter.wait()
        }
        report("cross-thread-tasks", "global") {
            let counter = AtomicCounter(target: count)
            for _ in 0..<count { Task.detached { counter.increment() } }
            counter.wait()
        }
        // Cross-thread closures: `execute` from this thread; the global baseline is Dispatch.
        report("cross-thread-execute", "uvloop") {
            let counter = LoopCounter(target: count)
            for _ in 0..<count { try loop.execute { counter.increment() } }
            counter.wait()
        }
        report("cross-thread-execute", "dispatch-global") {
            let counter = AtomicCounter(target: count)
            let queue = DispatchQueue.global()
            for _ in 0..<count { queue.async { counter.increment() } }
            counter.wait()
        }
    }

    private func report(_ workload: String, _ executor: String, _ body: () throws -> Void) {
        var rates: [Double] = []
        for _ in 0..<repeats {
            let start = monotonicNanoseconds()
            do { try body() } catch {
                print("executor benchmark failed: \(error)")
                return
            }
            rates.append(Double(jobs) / (Double(monotonicNanoseconds() - start) / 1e9))
        }
        rates.sort()
        var line = RunReport()
        line.add("executor", executor)
        line.add("workload", workload)
        line.add("jobs", jobs)
        line.add("repeats", repeats)
        line.add("jobs_per_s_median", Int(rates[rates.count / 2]))
        line.add("jobs_per_s_min", Int(rates.first!))
        line.add("jobs_per_s_max", Int(rates.last!))
        print(line.line(json: json))
    }
}

/// Counts on one loop thread (no atomics, as loop-confined state) and signals at the target.
final class LoopCounter: @unchecked Sendable {
    // @unchecked Sendable: `count` is changed on one loop thread only; others only wait on `done`.
    private var count = 0
    private let target: Int
    private let done = DispatchSemaphore(value: 0)
    init(target: Int) { self.target = target }
    func increment() {
        count += 1
        if count == target { done.signal() }
    }
    func wait() { done.wait() }
}

/// Counts from many threads and signals at the target.
final class AtomicCounter: @unchecked Sendable {
    // @unchecked Sendable: `count` is reached only under `lock`.
    private let lock = NSLock()
    private var count = 0
    private let target: Int
    private let done = DispatchSemaphore(value: 0)
    init(target: Int) { self.target = target }
    func increment() {
        lock.lock()
        count += 1
        let reached = count == target
        lock.unlock()
        if reached { done.signal() }
    }
    func wait() { done.wait() }
}
