import ArgumentParser
import Foundation
import Synchronization
import TaskIdentity
import UVLoop

/// The identity stream of the churn workloads (docs/BENCHMARKS.md): which slot the i-th change goes to.
struct IdentityStream {
    private var x: UInt64 = 88_172_645_463_325_252

    @inline(__always)
    mutating func nextSlot(_ slots: Int) -> Int {
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        return Int(x % UInt64(slots))
    }
}

/// Which implementations a run compares.
enum Implementation: String, CaseIterable, ExpressibleByArgument {
    case registry
    case naiveTasks = "naive-tasks"
    /// A bare `Task(executorPreference: loop)` per change, cancelling the slot's previous one:
    /// no registry, the Swift floor of an async run on the loop (churn only).
    case bareTasks = "bare-tasks"
    case all

    var expanded: [Implementation] { self == .all ? [.registry, .naiveTasks] : [self] }
}

/// Options every workload shares.
struct CommonOptions: ParsableArguments {
    @Option(
        help:
            "registry, naive-tasks, bare-tasks (churn only) or all (registry and naive-tasks, each in turn, in this process)."
    )
    var impl: Implementation = .all

    @Flag(help: "Print one JSON object per run instead of a key=value line.")
    var json = false

    @OptionGroup var tracing: TraceOptions
}

/// `--trace FILE`: the registry records its trace during the run, written as Trace Event JSON
/// (open it in Perfetto, or draw it with scripts/trace-png). Registry runs only.
struct TraceOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Record the registry's trace and write it to FILE (with several loops, one file per loop: FILE, FILE.1, …).",
            valueName: "FILE"))
    var trace: String?

    @Option(help: "The trace's ring: the latest events kept (older ones are dropped and counted).")
    var traceCapacity = RegistryTrace.defaultCapacity

    /// Starts each registry's trace on its loop, if `--trace` was given.
    func start<Key>(_ registries: [TaskRegistry<Key>], on loops: [UVLoop]) throws {
        guard trace != nil else { return }
        for (registry, loop) in zip(registries, loops) {
            try blockOn { try await loop.submit { try registry.startTrace(capacity: traceCapacity) } }
        }
    }

    /// Stops each registry's trace and writes it, if `--trace` was given; `suffix` tells runs
    /// of one process apart (`FILE.observed`).
    func write<Key>(_ registries: [TaskRegistry<Key>], on loops: [UVLoop], suffix: String? = nil) throws {
        guard let base = trace else { return }
        let path = suffix.map { "\(base).\($0)" } ?? base
        for (index, (registry, loop)) in zip(registries, loops).enumerated() {
            let recorded = try blockOn { try await loop.submit { try registry.stopTrace() } }
            guard let recorded else { continue }
            let file = index == 0 ? path : "\(path).\(index)"
            try recorded.write(toFile: file)
            FileHandle.standardError.write(
                Data(
                    "trace: \(recorded.eventCount) events (\(recorded.droppedEvents) dropped) written to \(file)\n".utf8
                ))
        }
    }
}

/// Thrown when a run's correctness fields fail; the driver exits 1.
struct CorrectnessFailure: Error, CustomStringConvertible {
    let description: String
}

/// Measures a run: wall time, CPU time and peak memory around `body`.
struct Measurement {
    let start = monotonicNanoseconds()
    let cpuStart = processCPUSeconds()

    var seconds: Double { Double(monotonicNanoseconds() - start) / 1e9 }
    var cpuSeconds: Double { processCPUSeconds() - cpuStart }
}

/// Runs `body` on the loop thread and blocks this (non-loop) thread until it calls `done`.
func runOnLoop(_ loop: UVLoop, _ body: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) throws {
    let finished = DispatchSemaphore(value: 0)
    try loop.execute { body { finished.signal() } }
    finished.wait()
}

/// Calls `check` on the loop every millisecond until it returns true, then `done`.
func pollOnLoop(
    _ loop: UVLoop, every period: Duration = .milliseconds(1), until check: @escaping () -> Bool,
    then done: @escaping () -> Void
) {
    let box = TimerBox()
    box.timer = try! loop.makeUVTimer {
        if check() {
            box.timer?.close()
            box.timer = nil
            done()
        } else {
            try! box.timer?.start(after: period)
        }
    }
    try! box.timer!.start(after: .zero)
}

/// Replays a schedule of `count` events on the loop, from now (`start`, monotonic nanoseconds):
/// every millisecond, `fire(i, start)` for each event `i` whose time `at(i)` (nanoseconds after
/// the start) has come, in order. Once every event has fired and `isOver(now)` (nanoseconds
/// after the start) says so, the replay stops and calls `finish`. Loop thread only.
func replaySchedule(
    on loop: UVLoop, count: Int, at: @escaping (Int) -> UInt64, fire: @escaping (Int, UInt64) -> Void,
    until isOver: @escaping (UInt64) -> Bool, then finish: @escaping () -> Void
) {
    let start = monotonicNanoseconds()
    var next = 0
    let box = TimerBox()
    box.timer = try! loop.makeUVTimer {
        let now = monotonicNanoseconds() &- start
        while next < count, at(next) <= now {
            fire(next, start)
            next += 1
        }
        if next == count && isOver(now) {
            box.timer?.close()
            box.timer = nil
            finish()
        } else {
            try! box.timer?.start(after: .milliseconds(1))
        }
    }
    try! box.timer!.start(after: .zero)
}

final class TimerBox: @unchecked Sendable {
    // @unchecked Sendable: the timer is created, started and fired on its loop thread only.
    var timer: UVTimer?
}

/// Per-slot bookkeeping shared by the workloads: the generation last declared, the generation
/// last completed, and the correctness counters (docs/BENCHMARKS.md). Loop-thread only for the
/// registry; the naive baseline guards it with a mutex.
///
/// Stale means "completed although a newer identity of the slot had been declared". When the
/// loop thread produces, `declared` is exact at every moment. When other threads produce, a
/// newer identity may be in flight (posted, not yet applied) when an older one completes,
/// which no registry can see; `declaredInFlight` then makes the check "never completes an
/// identity older than one already completed" (results never go backwards).
final class SlotLedger: @unchecked Sendable {
    // @unchecked Sendable: one thread at a time: its loop's (or the naive baseline's lock), then
    // the driver's after the run.
    /// Each slot's latest declared generation. @exclusivity(unchecked): written by one
    /// thread at a time (as above), and no access is held across a call; checked, the two
    /// accesses of each change cost the driver about 100 instructions a change, which the
    /// benchmark would charge to the implementation it drives (docs/safety.md).
    @exclusivity(unchecked) var declared: [UInt64]
    var completed: [UInt64]
    var actions = 0
    var stale = 0
    var doubleRuns = 0
    var declaredInFlight = false
    /// Which shard's slots this ledger holds (see `ShardedLedger`).
    let shard: Int
    /// Keeps the next object off the cache lines of the counters above, which the shard's loop
    /// writes at every change: the parts are allocated one after another.
    private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

    init(slots: Int, shard: Int = 0) {
        declared = Array(repeating: 0, count: slots)
        completed = Array(repeating: 0, count: slots)
        self.shard = shard
    }

    @inline(__always)
    func complete(slot: Int, generation: UInt64) {
        actions += 1
        if declaredInFlight ? generation < completed[slot] : generation != declared[slot] { stale += 1 }
        if completed[slot] == generation { doubleRuns += 1 }
        // The highest generation completed, not the last: on the global executor (naive-tasks)
        // a cancelled run that passed its cancellation check can complete after its slot's
        // final run. Under valgrind, whose scheduler can leave a woken thread waiting for many
        // batches, that made naive-tasks report missing_final=1 in about one bench run of three.
        completed[slot] = max(completed[slot], generation)
    }

    /// Slots whose last (highest) identity did not complete exactly once.
    var missingFinal: Int {
        var missing = doubleRuns
        for slot in declared.indices where declared[slot] > 0 && completed[slot] != declared[slot] { missing += 1 }
        return missing
    }
}

/// The ledger of a run over several loops: one `SlotLedger` per shard (slot s is entry
/// s / shards of part s % shards), each its own allocation, so that loops never write to a
/// shared counter or cache line. Each part is touched by its own loop's thread only.
final class ShardedLedger: Sendable {
    let parts: [SlotLedger]

    init(slots: Int, shards: Int) {
        parts = (0..<shards).map { shard in
            SlotLedger(slots: (slots - shard + shards - 1) / shards, shard: shard)
        }
    }

    /// The part and index of `slot`.
    @inline(__always)
    func locate(_ slot: Int) -> (SlotLedger, Int) {
        let count = parts.count
        return count == 1 ? (parts[0], slot) : (parts[slot % count], slot / count)
    }

    var actions: Int { parts.reduce(0) { $0 + $1.actions } }
    var stale: Int { parts.reduce(0) { $0 + $1.stale } }
    var missingFinal: Int { parts.reduce(0) { $0 + $1.missingFinal } }
}

/// One shard's part of a `ShardedLedger`, addressed by slot: what a shard's actions capture, so
/// that no two loops touch one object.
struct ShardLedger: Sendable {
    let part: SlotLedger
    let shardCount: Int

    @inline(__always)
    func complete(slot: Int, generation: UInt64) {
        part.complete(slot: shardCount == 1 ? slot : slot / shardCount, generation: generation)
    }
}

/// A mutable value used by one thread at a time (the loop's), captured by `@Sendable` closures.
final class LoopLocal<Value>: @unchecked Sendable {
    // @unchecked Sendable: one thread at a time: the loop's while it runs, the driver's before and after.
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Counts the naive baseline's live tasks, from any thread.
final class LiveTasks: Sendable {
    private let live = Atomic<Int>(0)
    func started() { live.add(1, ordering: .relaxed) }
    func ended() { live.subtract(1, ordering: .releasing) }
    var count: Int { live.load(ordering: .acquiring) }
}
