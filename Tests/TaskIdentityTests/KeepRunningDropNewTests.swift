import Testing
import UVLoop

@testable import TaskIdentity

/// `.keepRunningDropNew`: while a run is under way or a generation waits, a new identity is
/// dropped (WorkManager's `KEEP`). In virtual time.
@Suite("keepRunningDropNew: the running identity is kept, a new one dropped")
struct KeepRunningDropNewTests {
    static func declare(_ registry: TaskRegistry<String>, _ id: Int, log: EventLog, debounce: Duration = .zero) throws {
        try registry.task("a", id: id, debounce: debounce, policy: .keepRunningDropNew) { context in
            log.add("\(id) starts")
            do { try await context.clock.sleep(for: .milliseconds(100)) } catch {
                log.add("\(id) cancelled: \(String(describing: context.cancellationReason))")
                throw error
            }
            context.commit { log.add("\(id) landed") }
        }
    }

    @Test func aRunIsNeverCancelledForANewIdentityAndTheNewOnesAreDropped() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        try Self.declare(registry, 1, log: log)
        loop.advance(ms: 10)
        try Self.declare(registry, 2, log: log)
        loop.advance(ms: 10)
        try Self.declare(registry, 3, log: log)
        loop.advance(ms: 100)
        #expect(log.take() == ["1 starts", "1 landed"])
        #expect(phases.take() == ["g1 running", "g1 finished"])
        var counters = try registry.counters
        #expect(counters.declared == 3 && counters.dropped == 2 && counters.cancelled == 0 && counters.started == 1)
        #expect(registry.record("a", .main)?.identity as? Int == 1, "kept its identity")
        // Idle again: a new identity runs.
        try Self.declare(registry, 3, log: log)
        loop.advance(ms: 100)
        #expect(log.take() == ["3 starts", "3 landed"])
        #expect(phases.take() == ["g2 running", "g2 finished"])
        counters = try registry.counters
        #expect(counters.dropped == 2 && counters.started == 2)
        h.finish()
    }

    /// A generation waiting out its debounce window is kept too: the first identity of a
    /// burst runs, at the window's end.
    @Test func aWaitingGenerationIsKeptAndTheFirstOfABurstRuns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try Self.declare(registry, 1, log: log, debounce: .milliseconds(50))
        loop.advance(ms: 20)
        try Self.declare(registry, 2, log: log, debounce: .milliseconds(50))
        loop.advance(ms: 29)
        #expect(log.take().isEmpty)
        loop.advance(ms: 1)
        #expect(log.take() == ["1 starts"], "the window was not re-opened by the dropped identity")
        loop.advance(ms: 100)
        #expect(log.take() == ["1 landed"])
        #expect(try registry.counters.dropped == 1)
        h.finish()
    }

    /// The same identity is still `unchanged`, not dropped; a trace records the drop.
    @Test func anEqualIdentityIsUnchangedAndTheTraceRecordsTheDrop() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.startTrace()
        try Self.declare(registry, 1, log: log)
        loop.run()
        try Self.declare(registry, 1, log: log)
        try Self.declare(registry, 2, log: log)
        let counters = try registry.counters
        #expect(counters.unchanged == 1 && counters.dropped == 1)
        let trace = try registry.currentTrace()
        #expect(trace?.lines.contains { $0.hasSuffix("g1 new identity dropped") } == true, "\(trace?.lines ?? [])")
        loop.advance(ms: 100)
        h.finish()
    }
}
