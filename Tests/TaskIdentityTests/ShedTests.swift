import Testing
import UVLoop

@testable import TaskIdentity

/// `ConcurrencyLimit(maxRunning:maxQueued:shed:)`: a bounded queue that sheds the oldest queued
/// generation, or the newcomer, and never runs what it shed. In virtual time.
@Suite("A bounded limit queue sheds under overload")
struct ShedTests {
    static func declare(
        _ registry: TaskRegistry<String>, _ key: String, id: Int = 1, limit: ConcurrencyLimit, log: EventLog,
        priority: TaskPriority = .medium
    ) throws {
        try registry.task(key, id: id, priority: priority, limit: limit) { context in
            log.add("\(key)\(id) starts")
            try await context.clock.sleep(for: .milliseconds(100))
        }
    }

    @Test func aFullQueueShedsItsOldestAndNeverAKeysNewest() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1, maxQueued: 2)
        let phasesB = PhaseRecorder(registry, "b")
        for key in ["a", "b", "c"] { try Self.declare(registry, key, limit: limit, log: log) }
        loop.run()
        // c's newer identity replaces its queued one (a slot has one queued generation, its
        // newest), and joins last: nothing is shed.
        try Self.declare(registry, "c", id: 2, limit: limit, log: log)
        loop.run()
        #expect(try registry.counters.shed == 0)
        try Self.declare(registry, "d", limit: limit, log: log)  // the queue [b, c2] is full: b goes
        loop.run()
        #expect(try registry.phase(of: "b")?.description == "cancelled(shed)")
        #expect(phasesB.take() == ["g1 waiting", "g1 cancelled(shed)"])
        var state = try registry.limitState(of: limit)
        #expect(state.queued == 2 && state.shed == 1 && state.maxQueued == 2)
        #expect(state.description == "running 1/1, queued 2/2, shed 1, oldest wait 0.0 seconds")
        loop.advance(ms: 300)
        #expect(log.take() == ["a1 starts", "c2 starts", "d1 starts"], "b never ran")
        let counters = try registry.counters
        #expect(counters.shed == 1 && counters.cancelled == 1 && counters.coalesced == 1)
        // A shed task forgot its identity: declaring it again runs it.
        try Self.declare(registry, "b", limit: limit, log: log)
        loop.advance(ms: 100)
        #expect(log.take() == ["b1 starts"])
        state = try registry.limitState(of: limit)
        #expect(state.queued == 0 && state.shed == 1)
        h.finish()
    }

    @Test func shedNewestKeepsTheQueueAndShedsTheNewcomer() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1, maxQueued: 1, shed: .newest)
        for key in ["a", "b", "c"] {
            try Self.declare(registry, key, limit: limit, log: log)
            loop.run()
        }
        #expect(try registry.phase(of: "c")?.description == "cancelled(shed)")
        loop.advance(ms: 200)
        #expect(log.take() == ["a1 starts", "b1 starts"])
        h.finish()
    }

    /// The oldest of the lowest priority queued is shed; a newcomer below every queued
    /// priority is shed itself.
    @Test func prioritiesHoldWhenShedding() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1, maxQueued: 2)
        try Self.declare(registry, "running", limit: limit, log: log)
        loop.run()
        try Self.declare(registry, "high", limit: limit, log: log, priority: .high)
        try Self.declare(registry, "medium", limit: limit, log: log, priority: .medium)
        loop.run()
        try Self.declare(registry, "low", limit: limit, log: log, priority: .low)
        loop.run()
        #expect(try registry.phase(of: "low")?.description == "cancelled(shed)", "below every queued priority")
        try Self.declare(registry, "high2", limit: limit, log: log, priority: .high)
        loop.run()
        #expect(try registry.phase(of: "medium")?.description == "cancelled(shed)", "the lowest priority queued")
        loop.advance(ms: 300)
        #expect(log.take() == ["running1 starts", "high1 starts", "high21 starts"])
        #expect(try registry.counters.shed == 2)
        h.finish()
    }

    /// `maxQueued: 0`: nothing waits; what finds no place is shed at once.
    @Test func noQueueAtAllShedsEveryGenerationThatFindsNoPlace() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 2, maxQueued: 0)
        for key in ["a", "b", "c", "d"] { try Self.declare(registry, key, limit: limit, log: log) }
        loop.advance(ms: 200)
        #expect(log.take() == ["a1 starts", "b1 starts"])
        #expect(try registry.counters.shed == 2)
        #expect(try registry.limitState(of: limit).queued == 0)
        h.finish()
    }

    @Test func aNegativeBoundIsRefused() {
        #expect(throws: RegistryError.invalidConcurrencyLimit(maxQueued: -1)) {
            try ConcurrencyLimit(maxRunning: 1, maxQueued: -1)
        }
        let limit = try? ConcurrencyLimit(maxRunning: 4, maxQueued: 8, shed: .newest)
        #expect(limit?.description.hasSuffix("(maxRunning 4, maxQueued 8, shed newest)") == true)
        #expect(limit.flatMap { ConcurrencyLimit(bits: $0.bits) } == limit, "rebuilt from its word with its bound")
    }
}
