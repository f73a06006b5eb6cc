import ArgumentParser
import Foundation
import Synchronization
import TaskIdentity
import UVLoop

/// W1, W2 and W4: identity changes over many slots, each restarting the slot's action.
struct ChurnBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "churn",
        abstract: "Restart churn (W1), debounced churn (W2) and cross-thread churn (W4).",
        discussion: """
            Each change gives a slot's task a new identity. Changes are issued in batches; between \
            batches the producer lets the loop turn once. The run ends when every started action \
            has ended. Exit status 1 when stale (registry) or missing_final is not 0.
            """)

    @Option(help: "Number of slots.") var slots = 10_000
    @Option(help: "Number of identity changes.") var changes = 1_000_000
    @Option(name: .customLong("debounce-ms"), help: "Debounce window; 0 restarts at once.") var debounceMilliseconds = 0
    @Option(help: "Changes per batch (per loop turn).") var batch = 1_000
    @Option(help: "Producer threads other than the loop's (0: the loop thread produces).") var producers = 0
    @Option(help: "Registry loops (shards); with 0 producers each loop produces its own slots' changes.")
    var loops = 1
    @Option(
        help:
            "How the registry is declared to: template (one TaskTemplate, no allocation per change), closure (a closure per change) or synchronous (a synchronous template: no Swift task per run)."
    )
    var api: RegistryAPI = .template
    @Option(help: "Where the registry's Swift-task actions run: loop (the registry's loop) or global (every core).")
    var executor: ExecutorChoice = .loop
    @Option(
        name: .customLong("action-us"),
        help: "CPU time each action computes, in microseconds (0: actions only record their change).")
    var actionMicroseconds = 0
    @Flag(
        name: .customLong("names-runs"),
        help: "Registry only: name each run's Swift task (RegistryConfiguration.namesRuns), to measure a name's cost.")
    var namesRuns = false
    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard slots > 0, changes > 0, batch > 0 else {
            throw ValidationError("--slots, --changes and --batch must be positive")
        }
        guard debounceMilliseconds >= 0 else { throw ValidationError("--debounce-ms must not be negative") }
        guard (0...64).contains(producers) else { throw ValidationError("--producers must be between 0 and 64") }
        guard (1...64).contains(loops) else { throw ValidationError("--loops must be between 1 and 64") }
        guard (0...1_000_000).contains(actionMicroseconds) else {
            throw ValidationError("--action-us must be between 0 and 1000000")
        }
        if common.impl == .bareTasks && (producers != 0 || debounceMilliseconds != 0 || actionMicroseconds != 0) {
            throw ValidationError(
                "--impl bare-tasks restarts at once on the loop: --producers, --debounce-ms and --action-us must be 0")
        }
        if api == .synchronous && executor != .loop {
            throw ValidationError("--api synchronous runs its actions on the loop; --executor must be loop")
        }
    }

    func run() throws {
        var failures: [String] = []
        for implementation in common.impl.expanded {
            var report = RunReport()
            report.add("impl", implementation.rawValue)
            report.add("workload", "churn")
            report.add("slots", slots)
            report.add("changes", changes)
            report.add("debounce_ms", debounceMilliseconds)
            report.add("batch", batch)
            report.add("producers", producers)
            report.add("loops", implementation == .registry ? loops : 0)
            report.add("api", implementation == .registry ? api.rawValue : "-")
            let executorName = implementation == .naiveTasks ? "global" : "loop"
            report.add("executor", implementation == .registry ? executor.rawValue : executorName)
            report.add("action_us", actionMicroseconds)
            let shards = implementation == .registry ? loops : 1
            let ledger = ShardedLedger(slots: slots, shards: shards)
            // Each loop's share of the stream, split before the clock starts, so that a loop
            // walks only its own changes (one loop generates the stream as it goes).
            let shares = implementation == .registry && producers == 0 && loops > 1 ? streamShares() : nil
            let measurement = Measurement()
            var overloadedRetries = 0
            switch implementation {
            case .registry: overloadedRetries = try runRegistry(ledger, shares: shares)
            case .naiveTasks: try runNaive(ledger)
            case .bareTasks: try runBare(ledger)
            case .all: fatalError("expanded above")
            }
            let seconds = measurement.seconds
            report.add("seconds", seconds, decimals: 4)
            report.add("changes_per_s", Int(Double(changes) / seconds))
            report.add("actions", ledger.actions)
            report.add("stale", ledger.stale)
            report.add("missing_final", ledger.missingFinal)
            report.add("cpu_s", measurement.cpuSeconds, decimals: 3)
            // Declarations from producer threads refused with `.overloaded` and declared again.
            report.add("overloaded_retries", overloadedRetries)
            report.add("rss_mib", peakResidentMiB(), decimals: 1)
            print(report.line(json: common.json))
            fflush(nil)
            if ledger.missingFinal != 0 {
                failures.append("\(implementation.rawValue): missing_final=\(ledger.missingFinal)")
            }
            if implementation == .registry && ledger.stale != 0 { failures.append("registry: stale=\(ledger.stale)") }
        }
        if !failures.isEmpty { throw CorrectnessFailure(description: failures.joined(separator: "; ")) }
    }

    /// The identity stream split by shard (slot s belongs to shard s % loops, the placement of
    /// the registry's `shardHash: { $0 }`), in stream order.
    private func streamShares() -> [[UInt32]] {
        // Locals: the options' getters look up generic metadata on every call.
        let (loops, slots, changes) = (self.loops, self.slots, self.changes)
        var shares = [[UInt32]](repeating: [], count: loops)
        for index in shares.indices { shares[index].reserveCapacity(changes / loops + changes / 100 + 16) }
        var stream = IdentityStream()
        for _ in 0..<changes {
            let slot = stream.nextSlot(slots)
            shares[slot % loops].append(UInt32(slot))
        }
        return shares
    }

    // MARK: - registry

    /// Returns how many declarations were refused with `.overloaded` (and declared again).
    private func runRegistry(_ ledger: ShardedLedger, shares: [[UInt32]]?) throws -> Int {
        let group = try UVLoopGroup(loops: loops, namePrefix: "churn")
        defer { try? group.syncShutdown() }
        // Slot s belongs to shard s % loops, so each loop owns its slots (and its ledger part).
        var configuration = RegistryConfiguration()
        configuration.namesRuns = namesRuns
        let sharded = try ShardedTaskRegistry<Int>(group: group, configuration: configuration, shardHash: { $0 })
        let shards = sharded.shards
        try common.tracing.start(shards, on: group.loops)
        let debounce = Duration.milliseconds(debounceMilliseconds)
        // One declarer (template and ledger part) per shard: a template shared by the loops
        // would be retained by both at every declaration, one cache line bouncing between
        // their cores, which is the driver's cost, not the registry's.
        let declarers = try ledger.parts.map {
            try Declarer(
                api: api, executor: executor, debounce: debounce, actionMicroseconds: actionMicroseconds,
                ledger: $0, shardCount: loops)
        }
        let (slots, changes, batch) = (self.slots, self.changes, self.batch)
        var retries = 0

        if producers == 0 {
            let finished = DispatchGroup()
            for (index, registry) in shards.enumerated() {
                let loop = group.loops[index]
                let declare = declarers[index]
                let source: ChangeSource = shares.map { .share($0[index]) } ?? .stream(slots: slots, changes: changes)
                // A loop's share of each batch of the stream, so that N loops issue the stream
                // at one loop's pace: `batch` changes of the stream per turn, as with one loop.
                let loopBatch = shares == nil ? batch : max(1, batch / loops)
                finished.enter()
                try loop.execute {
                    produceOnLoop(
                        loop: loop, source: source, batch: loopBatch, ledger: ledger.parts[index],
                        shards: ledger.parts.count, label: "churn registry",
                        change: { slot, generation in try! declare(registry, slot: slot, generation: generation) },
                        quiesce: { done in awaitQuiescence(registry, loop, debounce: debounce, done) }
                    ) { finished.leave() }
                }
            }
            finished.wait()
        } else {
            // Producers on their own threads; each owns the slots congruent to its index, so
            // that every slot's identities arrive in stream order.
            let producerCount = producers
            // The final generations, computed by the same stream before the clock matters.
            var stream = IdentityStream()
            for _ in 0..<changes {
                let (part, index) = ledger.locate(stream.nextSlot(slots))
                part.declared[index] &+= 1
            }
            for part in ledger.parts { part.declaredInFlight = true }
            let posted = DispatchGroup()
            let overloadedRetries = Atomic<Int>(0)
            defer { retries = overloadedRetries.load(ordering: .relaxed) }
            for index in 0..<producerCount {
                posted.enter()
                Thread.detachNewThread {
                    var stream = IdentityStream()
                    var generations = [UInt64](repeating: 0, count: slots)
                    for _ in 0..<changes {
                        let slot = stream.nextSlot(slots)
                        guard slot % producerCount == index else { continue }
                        generations[slot] &+= 1
                        let index = sharded.shardIndex(for: slot)
                        let (shard, declare) = (shards[index], declarers[index])
                        // A declaration from another thread never blocks: when the loop is
                        // `postedCallLimit` calls behind it is refused, and this producer (a
                        // thread of its own, which may block) waits for the queue to drain.
                        while true {
                            do {
                                try declare(shard, slot: slot, generation: generations[slot])
                                break
                            } catch let error as RegistryError where error.code == .overloaded {
                                overloadedRetries.add(1, ordering: .relaxed)
                                try! blockOn { await shard.flush() }
                            } catch {
                                fatalError("declaration failed: \(error)")
                            }
                        }
                    }
                    posted.leave()
                }
            }
            posted.wait()
            try blockOn { await sharded.flush() }
            for (index, registry) in shards.enumerated() {
                try runOnLoop(group.loops[index]) { done in
                    awaitQuiescence(registry, group.loops[index], debounce: debounce, done)
                }
            }
        }
        try common.tracing.write(shards, on: group.loops)
        try blockOn { await sharded.shutdown() }
        return retries
    }

    // MARK: - bare-tasks

    /// The Swift floor of an async run: on the loop thread, each change cancels the slot's task
    /// and starts `Task(executorPreference: loop)`, whose body records the change unless it was
    /// cancelled. No registry: what any keyed restart on the loop must pay at least.
    private func runBare(_ ledger: ShardedLedger) throws {
        let group = try UVLoopGroup(loops: 1, namePrefix: "churn")
        defer { try? group.syncShutdown() }
        let loop = group.loops[0]
        let part = ledger.parts[0]
        // Loop thread only: the table of tasks and the count of live ones.
        let table = LoopLocal((tasks: [Task<Void, Never>?](repeating: nil, count: slots), live: 0))
        let (slots, changes, batch) = (self.slots, self.changes, self.batch)
        try runOnLoop(loop) { done in
            produceOnLoop(
                loop: loop, source: .stream(slots: slots, changes: changes), batch: batch, ledger: part, shards: 1,
                label: "churn bare-tasks",
                change: { slot, generation in
                    table.value.tasks[slot]?.cancel()
                    table.value.live += 1
                    table.value.tasks[slot] = Task(executorPreference: loop) {
                        defer { table.value.live -= 1 }
                        guard !Task.isCancelled else { return }
                        part.complete(slot: slot, generation: generation)
                    }
                },
                quiesce: { done in pollOnLoop(loop, until: { table.value.live == 0 }, then: done) },
                done: done)
        }
    }

    // MARK: - naive-tasks

    private func runNaive(_ ledger: ShardedLedger) throws {
        let debounce = Duration.milliseconds(debounceMilliseconds)
        let (slots, changes, batch, actionMicroseconds) = (
            self.slots, self.changes, self.batch, self.actionMicroseconds
        )
        let recorder = NaiveRecorder(ledger: ledger.parts[0])
        let live = LiveTasks()
        let producerCount = max(producers, 1)
        try blockOn {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<producerCount {
                    group.addTask {
                        var progress = ProgressLine(label: "churn naive-tasks")
                        var stream = IdentityStream()
                        var tasks = [Task<Void, Never>?](repeating: nil, count: slots)
                        var generations = [UInt64](repeating: 0, count: slots)
                        var issued = 0
                        while issued < changes {
                            let end = min(issued + batch, changes)
                            while issued < end {
                                let slot = stream.nextSlot(slots)
                                issued += 1
                                guard slot % producerCount == index else { continue }
                                generations[slot] &+= 1
                                let generation = generations[slot]
                                recorder.declare(slot: slot, generation: generation)
                                tasks[slot]?.cancel()
                                live.started()
                                tasks[slot] = Task {
                                    defer { live.ended() }
                                    if debounce > .zero {
                                        do { try await Task.sleep(for: debounce) } catch { return }
                                    }
                                    guard !Task.isCancelled else { return }
                                    if actionMicroseconds > 0 {
                                        computeFor(microseconds: actionMicroseconds)
                                        guard !Task.isCancelled else { return }
                                    }
                                    recorder.complete(slot: slot, generation: generation)
                                }
                            }
                            if index == 0 { progress.update(done: issued, of: changes) }
                            await Task.yield()  // let the executor turn once between batches
                        }
                        progress.finish()
                    }
                }
            }
            while live.count > 0 { await Task.yield() }
        }
    }
}

/// Waits (on the loop) until every declared identity has started and every action has ended.
///
/// Polls every `period`: the last windows close a debounce after the last change, so a run
/// with a long debounce (W2 under callgrind: 30 s) polls a debounce/64, not every millisecond;
/// otherwise how long the wait takes would decide how many polls its instruction count holds.
func awaitQuiescence<Key>(
    _ registry: TaskRegistry<Key>, _ loop: UVLoop, debounce: Duration = .zero, _ done: @escaping @Sendable () -> Void
) {
    pollOnLoop(
        loop, every: max(.milliseconds(1), debounce / 64),
        until: {
            let counters = try! registry.counters  // on the loop thread
            return counters.runningActions == 0 && counters.liveGenerations == 0
        }, then: done)
}

/// The naive baseline's shared ledger: actions run on the global executor's threads, so it
/// takes a lock, as a hand-written table of tasks would.
final class NaiveRecorder: @unchecked Sendable {
    // @unchecked Sendable: the ledger is reached only under `lock`.
    private let lock = NSLock()
    private let ledger: SlotLedger
    init(ledger: SlotLedger) { self.ledger = ledger }

    func declare(slot: Int, generation: UInt64) {
        lock.lock()
        ledger.declared[slot] = generation
        lock.unlock()
    }

    func complete(slot: Int, generation: UInt64) {
        lock.lock()
        ledger.complete(slot: slot, generation: generation)
        lock.unlock()
    }
}

/// Where a loop's producer takes its changes from: the whole identity stream (one loop), or
/// its own share of it, split before the run (several loops).
enum ChangeSource: Sendable {
    case stream(slots: Int, changes: Int)
    case share([UInt32])
}

/// The loop-thread producer of one shard: issues the shard's changes in batches, one batch per
/// libuv turn (a zero-delay timer), each through `change(slot, generation)`, then calls
/// `quiesce`, which calls `done` once every action has ended.
private func produceOnLoop(
    loop: UVLoop, source: ChangeSource, batch: Int, ledger: SlotLedger, shards: Int, label: String,
    change: @escaping (Int, UInt64) -> Void, quiesce: @escaping (@escaping @Sendable () -> Void) -> Void,
    done: @escaping @Sendable () -> Void
) {
    let producer = LoopLocal((stream: IdentityStream(), issued: 0))
    let progress = LoopLocal(ProgressLine(label: label))
    let total: Int
    switch source {
    case .stream(_, let changes): total = changes
    case .share(let share): total = share.count
    }
    let turn = TimerBox()
    turn.timer = try! loop.makeUVTimer {
        let end = min(producer.value.issued + batch, total)
        while producer.value.issued < end {
            let slot: Int
            switch source {
            case .stream(let slots, _): slot = producer.value.stream.nextSlot(slots)
            case .share(let share): slot = Int(share[producer.value.issued])
            }
            producer.value.issued += 1
            let index = slot / shards
            let generation = ledger.declared[index] &+ 1
            ledger.declared[index] = generation
            change(slot, generation)
        }
        if ledger.shard == 0 { progress.value.update(done: producer.value.issued, of: total) }
        if producer.value.issued < total {
            try! turn.timer!.start(after: .zero)  // the next libuv turn
        } else {
            turn.timer!.close()
            turn.timer = nil
            progress.value.finish()
            quiesce(done)
        }
    }
    try! turn.timer!.start(after: .zero)
}
