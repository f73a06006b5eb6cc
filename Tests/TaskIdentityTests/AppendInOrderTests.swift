import Testing
import UVLoop

@testable import TaskIdentity

/// `.appendInOrder(maxQueued:)`: every identity runs, once each, in the order declared, with a
/// bounded queue behind the run (WorkManager's `APPEND`). In virtual time.
@Suite("appendInOrder: every identity runs, once each, in order")
struct AppendInOrderTests {
    static func declare(
        _ registry: TaskRegistry<String>, _ id: Int, log: EventLog, maxQueued: Int = 8, key: String = "a"
    ) throws {
        try registry.task(key, id: id, policy: .appendInOrder(maxQueued: maxQueued)) { context in
            log.add("\(id) starts")
            do { try await context.clock.sleep(for: .milliseconds(100)) } catch {
                log.add("\(id) cancelled")
                throw error
            }
            context.commit { log.add("\(id) landed") }
        }
    }

    @Test func everyIdentityRunsOnceEachInOrder() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        try Self.declare(registry, 1, log: log)
        loop.advance(ms: 10)
        for id in 2...4 { try Self.declare(registry, id, log: log) }
        loop.advance(ms: 500)
        #expect(
            log.take() == [
                "1 starts", "1 landed", "2 starts", "2 landed", "3 starts", "3 landed", "4 starts", "4 landed",
            ])
        let finished = phases.take().filter { $0.hasSuffix("finished") }
        #expect(finished == ["g1 finished", "g2 finished", "g3 finished", "g4 finished"])
        let counters = try registry.counters
        #expect(counters.declared == 4 && counters.finished == 4 && counters.cancelled == 0 && counters.coalesced == 0)
        h.finish()
    }

    /// `maxQueued: 2`: the pending identity and one more wait; the next is dropped, counted.
    @Test func aFullQueueDropsTheNewIdentity() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try Self.declare(registry, 1, log: log, maxQueued: 2)
        loop.run()
        for id in 2...4 { try Self.declare(registry, id, log: log, maxQueued: 2) }
        loop.advance(ms: 400)
        #expect(log.take().filter { $0.hasSuffix("starts") } == ["1 starts", "2 starts", "3 starts"])
        #expect(try registry.counters.dropped == 1)
        h.finish()
    }

    /// An identity equal to the last one declared is unchanged; an earlier one runs again.
    @Test func onlyTheLastIdentityDeclaredIsUnchanged() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try Self.declare(registry, 1, log: log)
        loop.run()
        for id in [2, 2, 3, 3, 1] { try Self.declare(registry, id, log: log) }
        loop.advance(ms: 500)
        #expect(log.take().filter { $0.hasSuffix("starts") } == ["1 starts", "2 starts", "3 starts", "1 starts"])
        #expect(try registry.counters.unchanged == 2)
        h.finish()
    }

    /// `cancel` ends the run and the pending identity, and drops those still waiting;
    /// `dropPending` ends the pending one, and the next takes its place.
    @Test func cancelDropsTheWaitingAndDropPendingMovesTheNextUp() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try Self.declare(registry, 1, log: log)
        loop.run()
        for id in 2...4 { try Self.declare(registry, id, log: log) }
        try registry.dropPending("a")  // 2 never runs; 3 is pending now
        loop.run()
        try registry.cancel("a")  // 1 cancelled, 3 cancelled, 4 dropped
        loop.advance(ms: 500)
        #expect(log.take() == ["1 starts", "1 cancelled"])
        let counters = try registry.counters
        #expect(counters.dropped == 1 && counters.cancelled == 3 && counters.finished == 0)
        // The slot declares afresh afterwards.
        try Self.declare(registry, 5, log: log)
        loop.advance(ms: 100)
        #expect(log.take() == ["5 starts", "5 landed"])
        h.finish()
    }

    @Test func aBoundBelowOneIsRefused() {
        let registry = TaskRegistry<String>(loop: TestLoop())
        #expect(throws: RegistryError.invalidAppendQueue(0)) {
            try registry.task("a", id: 1, policy: .appendInOrder(maxQueued: 0)) { _ in }
        }
    }
}
