import ArgumentParser
import Foundation
// didSet tracking, the cheaper of Observation's two interfaces, so that the floor is the least
// observation can cost (the library uses it with the ObservationSPI trait; by default it uses
// the public willSet interface).
@_spi(SwiftUI) import Observation
import TaskIdentity
import UVLoop

/// W7: observed churn. Each slot's identity is derived from an `@Observable` model
/// (`task(_:tracking:)`), and each change of the identity stream is one property write; the
/// same stream declared through explicit `task(_:id:template:)` is the baseline.
struct ObservedBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "observed",
        abstract: "Observed churn (W7): identities derived from @Observable models, against explicit declarations.",
        discussion: """
            Slot s's model holds the generation of its latest change; the observed task tracks it, \
            and its action commits the generation it was given. The explicit run declares the same \
            generations with task(_:id:template:). Changes are written (or declared) on the loop \
            thread in batches, one batch per loop turn. After the stream, the observed run writes \
            one model --burst times in one turn and reports how many evaluations that took (1). \
            Exit status 1 when stale or missing_final is not 0, or the burst took more than one \
            evaluation.
            """)

    /// Which way identities reach the registry, or `observation-floor`: the same writes with
    /// only Observation's own work (re-tracking one read per change, no registry, no task),
    /// the least any tracking built on Observation can cost.
    enum Way: String, CaseIterable, ExpressibleByArgument {
        case observed
        case explicit
        case observationFloor = "observation-floor"
        case all

        var expanded: [Way] { self == .all ? [.observed, .explicit, .observationFloor] : [self] }
    }

    @Option(help: "Number of slots (one model each).") var slots = 10_000
    @Option(help: "Number of identity changes (property writes).") var changes = 1_000_000
    @Option(help: "Changes per batch (per loop turn).") var batch = 1_000
    @Option(help: "Writes to one model in one turn after the stream (observed only).") var burst = 1_000
    @Option(help: "observed, explicit, observation-floor or all (each in turn, in this process).")
    var impl: Way = .all
    @Flag(
        name: .customLong("equal-values"),
        help:
            "The identity reads the model's property and maps it to a constant, so that each write costs an evaluation and nothing else (observed only; no actions run after the first)."
    )
    var equalValues = false
    @Flag(help: "Print one JSON object per run instead of a key=value line.") var json = false
    @OptionGroup var tracing: TraceOptions

    func validate() throws {
        guard slots > 0, changes > 0, batch > 0, burst > 0 else {
            throw ValidationError("--slots, --changes, --batch and --burst must be positive")
        }
        if equalValues && impl != .observed { throw ValidationError("--equal-values needs --impl observed") }
    }

    func run() throws {
        var failures: [String] = []
        for way in impl.expanded {
            if way == .observationFloor {
                print(observationFloor().line(json: json))
                fflush(nil)
                continue
            }
            var report = RunReport()
            report.add("impl", way.rawValue)
            report.add("workload", "observed")
            report.add("slots", slots)
            report.add("changes", changes)
            report.add("batch", batch)
            let ledger = SlotLedger(slots: slots)
            let loop = UVLoop(name: "observed")
            try loop.start()
            let registry = TaskRegistry<Int>(loop: loop)
            try tracing.start([registry], on: [loop])
            let models = LoopLocal([SlotModel]())
            let measurement = Measurement()
            try runOnLoop(loop) { done in
                if way == .observed {
                    models.value = (0..<slots).map { _ in SlotModel() }
                    let equalValues = self.equalValues
                    for slot in 0..<slots {
                        let model = models.value[slot]
                        let identity: () -> UInt64 =
                            equalValues ? { model.generation & 0 } : { model.generation }
                        try! registry.task(slot, tracking: identity) { generation, context in
                            // Generation 0 is the model's initial value, not a change of the stream.
                            if generation > 0 { context.commit { ledger.complete(slot: slot, generation: generation) } }
                        }
                    }
                }
                produce(way, registry: registry, loop: loop, models: models, ledger: ledger, done: done)
            }
            let seconds = measurement.seconds
            let counters = try blockOn { try await registry.countersSnapshot() }
            report.add("seconds", seconds, decimals: 4)
            report.add("changes_per_s", Int(Double(changes) / seconds))
            if equalValues {
                report.add("ns_per_evaluation", seconds * 1e9 / Double(counters.identityEvaluations), decimals: 0)
            }
            report.add("actions", ledger.actions)
            report.add("stale", ledger.stale)
            report.add("missing_final", ledger.missingFinal)
            report.add("evaluations", Int(counters.identityEvaluations))
            if way == .observed && !equalValues {
                let evaluations = try burstEvaluations(registry: registry, loop: loop, models: models, ledger: ledger)
                report.add("burst_writes", burst)
                report.add("burst_evaluations", Int(evaluations))
                if evaluations != 1 { failures.append("observed: burst_evaluations=\(evaluations)") }
            }
            report.add("cpu_s", measurement.cpuSeconds, decimals: 3)
            report.add("rss_mib", peakResidentMiB(), decimals: 1)
            print(report.line(json: json))
            fflush(nil)
            // With several implementations in one run, one file each (FILE.observed, FILE.explicit).
            try tracing.write([registry], on: [loop], suffix: impl.expanded.count > 1 ? way.rawValue : nil)
            try blockOn { await registry.shutdown() }
            try loop.syncShutdown()
            if equalValues { continue }  // no action runs after the first: nothing to check
            if ledger.missingFinal != 0 { failures.append("\(way.rawValue): missing_final=\(ledger.missingFinal)") }
            if ledger.stale != 0 { failures.append("\(way.rawValue): stale=\(ledger.stale)") }
        }
        if !failures.isEmpty { throw CorrectnessFailure(description: failures.joined(separator: "; ")) }
    }

    /// Issues the stream on the loop, `batch` changes per libuv turn, then waits for quiescence.
    private func produce(
        _ way: Way, registry: TaskRegistry<Int>, loop: UVLoop, models: LoopLocal<[SlotModel]>, ledger: SlotLedger,
        done: @escaping @Sendable () -> Void
    ) {
        let template = try! TaskTemplate<Int> { slot, context in
            context.commit { ledger.complete(slot: slot, generation: context.generation) }
        }
        let producer = LoopLocal((stream: IdentityStream(), issued: 0))
        let progress = LoopLocal(ProgressLine(label: "observed \(way.rawValue)"))
        let (slots, changes, batch, equalValues) = (self.slots, self.changes, self.batch, self.equalValues)
        let turn = TimerBox()
        turn.timer = try! loop.makeUVTimer {
            let end = min(producer.value.issued + batch, changes)
            while producer.value.issued < end {
                let slot = producer.value.stream.nextSlot(slots)
                producer.value.issued += 1
                let generation = ledger.declared[slot] &+ 1
                ledger.declared[slot] = generation
                if way == .observed {
                    models.value[slot].generation = generation
                } else {
                    try! registry.task(slot, id: generation, template: template)
                }
            }
            progress.value.update(done: producer.value.issued, of: changes)
            if producer.value.issued < changes {
                try! turn.timer!.start(after: .zero)  // the next libuv turn
            } else {
                turn.timer!.close()
                turn.timer = nil
                progress.value.finish()
                awaitSettled(registry, loop, ledger, ledgerCompletes: !equalValues, done)
            }
        }
        try! turn.timer!.start(after: .zero)
    }

    /// The stream's writes with Observation's work alone: each change is a write to a model
    /// tracked by one `withObservationTracking` read, and each batch re-tracks the models its
    /// writes fired, as an evaluation does, with no registry and no task.
    private func observationFloor() -> RunReport {
        var report = RunReport()
        report.add("impl", Way.observationFloor.rawValue)
        report.add("workload", "observed")
        report.add("slots", slots)
        report.add("changes", changes)
        report.add("batch", batch)
        let models = (0..<slots).map { _ in SlotModel() }
        let fired = FiredModels()
        let onChange: [@Sendable (ObservationTracking) -> Void] = (0..<slots).map { slot in
            { tracking in
                tracking.cancel()
                fired.slots.append(slot)
            }
        }
        var sum: UInt64 = 0
        for slot in 0..<slots {
            let model = models[slot]
            sum &+= withObservationTracking({ model.generation }, didSet: onChange[slot])
        }
        let measurement = Measurement()
        var stream = IdentityStream()
        var issued = 0
        while issued < changes {
            let end = min(issued + batch, changes)
            while issued < end {
                issued += 1
                models[stream.nextSlot(slots)].generation = UInt64(issued)
            }
            let due = fired.slots
            fired.slots.removeAll(keepingCapacity: true)
            for slot in due {
                let model = models[slot]
                sum &+= withObservationTracking({ model.generation }, didSet: onChange[slot])
            }
        }
        let seconds = measurement.seconds
        report.add("seconds", seconds, decimals: 4)
        report.add("changes_per_s", Int(Double(changes) / seconds))
        report.add("checksum", Int(truncatingIfNeeded: sum))
        report.add("cpu_s", measurement.cpuSeconds, decimals: 3)
        report.add("rss_mib", peakResidentMiB(), decimals: 1)
        return report
    }

    /// Writes one model `burst` times in one loop turn and returns the evaluations it caused.
    private func burstEvaluations(
        registry: TaskRegistry<Int>, loop: UVLoop, models: LoopLocal<[SlotModel]>, ledger: SlotLedger
    ) throws -> UInt64 {
        let before = try blockOn { try await registry.countersSnapshot() }.identityEvaluations
        let burst = self.burst
        try runOnLoop(loop) { done in
            let model = models.value[0]
            for _ in 0..<burst { model.generation &+= 1 }
            ledger.declared[0] = model.generation
            awaitSettled(registry, loop, ledger, ledgerCompletes: true, done)
        }
        return try blockOn { try await registry.countersSnapshot() }.identityEvaluations - before
    }
}

/// Waits (on the loop) until the registry is quiescent and every slot's latest generation has
/// completed: an observed write is evaluated a turn after it, so quiescence alone can come
/// early. A slot that never completes shows as missing_final after 100 quiet polls. Without
/// `ledgerCompletes` (no action runs), two quiet polls in a row are enough.
private func awaitSettled(
    _ registry: TaskRegistry<Int>, _ loop: UVLoop, _ ledger: SlotLedger, ledgerCompletes: Bool,
    _ done: @escaping @Sendable () -> Void
) {
    let quietPolls = LoopLocal(0)
    pollOnLoop(
        loop,
        until: {
            let counters = try! registry.counters  // on the loop thread
            guard counters.runningActions == 0 && counters.liveGenerations == 0 else {
                quietPolls.value = 0
                return false
            }
            quietPolls.value += 1
            guard ledgerCompletes else { return quietPolls.value >= 2 }
            return ledger.missingFinal == 0 || quietPolls.value >= 100
        }, then: done)
}

/// The slots whose tracked read fired, in the floor run (one thread).
private final class FiredModels: @unchecked Sendable {
    // @unchecked Sendable: written by Observation's callbacks on the only thread of the run.
    var slots: [Int] = []
}

/// One slot's model: the generation of its latest change.
@Observable
final class SlotModel {
    var generation: UInt64 = 0
}
