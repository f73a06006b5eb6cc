import Testing
import UVLoop

@testable import TaskIdentity

/// A small deterministic generator (SplitMix64), so a failing seed can be replayed.
struct SplitMix64 {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}

/// 100,000 random operations against a reference model of the `.task(id:)` rules.
@Suite("Registry against a reference model")
struct ModelTests {
    /// What the model knows of one slot: SwiftUI's identity rule and the slot's lifetimes.
    struct SlotModel {
        var live = false
        var lifetime = 0
        var id = -1
        var generation: UInt64 = 0
    }

    /// A run's identity across slot lifetimes.
    struct RunKey: Hashable {
        let key: Int
        let lifetime: Int
        let generation: UInt64
    }

    /// What the actions observed, checked as it happens.
    final class Observations: @unchecked Sendable {
        var model: [SlotModel]
        var starts: [RunKey: Int] = [:]
        var completions: [RunKey: Int] = [:]
        var staleCommits: [String] = []
        var commits = 0
        init(slots: Int) { model = Array(repeating: SlotModel(), count: slots) }
    }

    static let slotCount = 32

    /// Each key has a fixed configuration, so every policy is exercised.
    static func declare(
        _ registry: TaskRegistry<Int>, key: Int, id: Int, seed: UInt64, observed: Observations
    ) throws {
        let lifetime = observed.model[key].lifetime
        /// Commits the run, recording a commit that the model says is stale.
        @Sendable func commit(_ context: TaskContext, _ run: RunKey) {
            context.commit {
                let slot = observed.model[key]
                if !slot.live || slot.lifetime != lifetime || slot.generation != context.generation {
                    observed.staleCommits.append("key \(key) g\(context.generation) committed; model: \(slot)")
                }
                observed.commits += 1
                observed.completions[run, default: 0] += 1
            }
        }
        let action: TaskAction = { context in
            let run = RunKey(key: key, lifetime: lifetime, generation: context.generation)
            observed.starts[run, default: 0] += 1
            var rng = SplitMix64(state: seed)
            let behaviour = rng.below(10)
            if behaviour < 6 {
                try await context.clock.sleep(for: .milliseconds(rng.below(30)))
            } else if behaviour < 8 {
                // Ignores cancellation, then tries to commit anyway: must be dropped if stale.
                try? await context.clock.sleep(for: .milliseconds(rng.below(30)))
            } else if behaviour == 8 {
                struct ActionFailed: Error {}
                try await context.clock.sleep(for: .milliseconds(rng.below(10)))
                throw ActionFailed()
            }
            commit(context, run)
        }
        // Synchronous runs (no Swift task): called once their delay has passed, or at once.
        let synchronousAction: @Sendable (Int, TaskContext) throws -> Void = { _, context in
            let run = RunKey(key: key, lifetime: lifetime, generation: context.generation)
            if !context.isCurrent {
                observed.staleCommits.append("key \(key) g\(context.generation): a cancelled run's action was called")
            }
            observed.starts[run, default: 0] += 1
            var rng = SplitMix64(state: seed)
            if rng.below(10) == 8 {
                struct ActionFailed: Error {}
                throw ActionFailed()
            }
            commit(context, run)
        }
        switch key % 6 {
        case 0: try registry.task(key, id: id, action: action)
        case 1: try registry.task(key, id: id, debounce: .milliseconds(10), action: action)
        case 2: try registry.task(key, id: id, policy: .awaitPrevious, action: action)
        case 3: try registry.task(key, id: id, throttle: .milliseconds(15), action: action)
        case 4:
            let template = try TaskTemplate<Int>.synchronous(after: .milliseconds(12), action: synchronousAction)
            try registry.task(key, id: id, template: template)
        default:
            let template = try TaskTemplate<Int>.synchronous(
                debounce: .milliseconds(5), policy: .awaitPrevious, action: synchronousAction)
            try registry.task(key, id: id, template: template)
        }
    }

    @Test(arguments: [UInt64(1), 2])
    func randomOperationsKeepEveryInvariant(seed: UInt64) throws {
        let h = RegistryHarness<Int>()
        let (loop, registry) = (h.loop, h.registry)
        let observed = Observations(slots: Self.slotCount)
        var rng = SplitMix64(state: seed)
        let operations = 50_000  // per seed; two seeds make 100,000

        for step in 0..<operations {
            let roll = rng.below(100)
            let key = rng.below(Self.slotCount)
            if roll < 60 {
                let id = rng.below(4)
                var slot = observed.model[key]
                if !slot.live {
                    slot = SlotModel(live: true, lifetime: slot.lifetime + 1, id: id, generation: 1)
                } else if slot.id != id {
                    slot.id = id
                    slot.generation += 1
                }
                observed.model[key] = slot
                try Self.declare(registry, key: key, id: id, seed: rng.next(), observed: observed)
            } else if roll < 65 {
                try registry.remove(key)
                observed.model[key].live = false
            } else if roll < 95 {
                loop.advance(by: .milliseconds(rng.below(20)))
            } else {
                loop.run()
            }
            try checkInvariants(registry, observed, step: step)
        }
        // Quiet period: every pending identity starts and every run ends.
        loop.advance(by: .seconds(1))
        try checkInvariants(registry, observed, step: operations)
        for (key, slot) in observed.model.enumerated() where slot.live {
            let run = RunKey(key: key, lifetime: slot.lifetime, generation: slot.generation)
            #expect(observed.starts[run] == 1, "slot \(key): its last identity ran exactly once")
            #expect(try registry.phase(of: key)?.isFinal == true, "slot \(key) settled")
        }
        #expect(observed.starts.values.allSatisfy { $0 == 1 }, "no generation started twice")
        #expect(observed.completions.values.allSatisfy { $0 == 1 })
        #expect(observed.commits > 1000, "the run exercised commits")
        let counters = try registry.counters
        #expect(counters.coalesced > 0 && counters.cancelled > 0 && counters.failed > 0)
        #expect(counters.staleCommitsDropped > 0, "actions that ignore cancellation were caught")
        h.finish()
        try checkCounters(registry.counters)
    }

    private func checkInvariants(_ registry: TaskRegistry<Int>, _ observed: Observations, step: Int) throws {
        try #require(observed.staleCommits.isEmpty, "step \(step): \(observed.staleCommits)")
        var liveSlots = 0
        for (key, slot) in observed.model.enumerated() {
            guard slot.live else {
                try #require(try !registry.contains(key), "step \(step): removed slot \(key) still exists")
                continue
            }
            liveSlots += 1
            try #require(try registry.generation(of: key) == slot.generation, "step \(step): slot \(key) generation")
            // The latest identity either ran (or runs) or is pending: never cancelled by policy.
            let phase = try #require(try registry.phase(of: key))
            switch phase {
            case .waiting, .running, .finished, .failed, .cancelled(.actionCancelled):
                break
            case .idle, .cancelled:
                Issue.record("step \(step): slot \(key)'s latest identity is \(phase)")
            }
            let run = RunKey(key: key, lifetime: slot.lifetime, generation: slot.generation)
            switch phase {
            case .waiting:
                try #require(observed.starts[run] == nil, "step \(step): waiting run \(run) already started")
            case .running:
                // Its Swift task exists; the action's first line runs on the loop's next turn.
                try #require((observed.starts[run] ?? 0) <= 1, "step \(step): run \(run) started twice")
            default:
                try #require(
                    observed.starts[run] == 1, "step \(step): \(phase) run \(run) started \(observed.starts[run] ?? 0)×"
                )
            }
        }
        let counters = try registry.counters
        try #require(counters.liveSlots == liveSlots, "step \(step): live slots")
        try checkCounters(counters)
    }

    private func checkCounters(_ counters: RegistryCounters) throws {
        let ended = counters.unchanged + counters.finished + counters.failed + counters.cancelled + counters.coalesced
        try #require(counters.declared == ended + UInt64(counters.liveGenerations), "counters: \(counters)")
        try #require(counters.started <= counters.declared - counters.unchanged - counters.coalesced)
        try #require(counters.restarted <= counters.started)
        try #require(counters.runningActions >= 0 && counters.liveGenerations >= 0)
    }
}
