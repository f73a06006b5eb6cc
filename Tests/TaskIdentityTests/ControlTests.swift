import Testing
import UVLoop

@testable import TaskIdentity

/// `cancel`, `runNow` and `dropPending`: a declared task controlled without a new declaration.
@Suite("Controlling a declared task: cancel, runNow, dropPending")
struct ControlTests {
    @Test func cancelEndsTheRunningActionKeepsTheSlotAndAnEqualIdStartsAgain() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        try registry.task("a", id: "q") { context in
            log.add("start \(context.generation)")
            do { try await context.clock.sleep(for: .seconds(10)) } catch { log.add("cancelled \(context.generation)") }
            context.commit { log.add("landed \(context.generation)") }
        }
        loop.run()
        try registry.cancel("a")
        loop.run()
        #expect(log.take() == ["start 1", "cancelled 1"], "the commit of a cancelled run is dropped")
        #expect(try registry.phase(of: "a")?.description == "cancelled(cancelledByCaller)")
        #expect(try registry.contains("a"), "the slot stays")
        #expect(try registry.counters.cancelled == 1)
        #expect(try registry.counters.staleCommitsDropped == 1)
        // The task forgot its identity: the same id starts a new run.
        try registry.task("a", id: "q") { context in log.add("start \(context.generation)") }
        loop.run()
        #expect(log.take() == ["start 2"])
        #expect(phases.take() == ["g1 running", "g1 cancelled(cancelledByCaller)", "g2 running", "g2 finished"])
        // Nothing waits or runs now: cancel leaves the task alone, and an equal id is unchanged.
        try registry.cancel("a")
        try registry.cancel("unknown")
        try registry.task("a", id: "q") { _ in log.add("never") }
        loop.run()
        #expect(log.take().isEmpty)
        #expect(try registry.phase(of: "a")?.description == "finished")
        h.finish()
    }

    @Test func cancelEndsAWaitingGenerationWithoutStartingIt() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1, debounce: .milliseconds(100)) { _ in log.add("ran") }
        loop.run()
        try registry.cancel("a")
        loop.advance(ms: 200)
        #expect(log.take().isEmpty)
        #expect(try registry.phase(of: "a")?.description == "cancelled(cancelledByCaller)")
        #expect(try registry.counters.cancelled == 1)
        h.finish()
    }

    @Test func runNowStartsADebouncedGenerationAtOnceAndItsTimerEntryIsThenStale() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        for query in ["s", "se", "sea"] {
            try registry.task("box", id: query, debounce: .milliseconds(250)) { context in
                log.add("search \(context.id(as: String.self)!)")
            }
        }
        loop.advance(ms: 10)
        #expect(log.take().isEmpty)
        try registry.runNow("box")  // Enter
        loop.run()
        #expect(log.take() == ["search sea"])
        loop.advance(ms: 500)
        #expect(log.take().isEmpty, "the debounce deadline no longer starts anything")
        #expect(try registry.counters.started == 1)
        // Nothing debouncing: runNow does nothing.
        try registry.runNow("box")
        loop.run()
        #expect(try registry.counters.started == 1)
        h.finish()
    }

    @Test func runNowClosesAThrottleWindowButKeepsThePolicy() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("t", id: 1, throttle: .seconds(1)) { context in log.add("run \(context.generation)") }
        loop.run()
        try registry.task("t", id: 2, throttle: .seconds(1)) { context in log.add("run \(context.generation)") }
        loop.run()
        #expect(log.take() == ["run 1"], "held by the throttle window")
        try registry.runNow("t")
        loop.run()
        #expect(log.take() == ["run 2"])
        #expect(try registry.openTimerCount >= 1)
        loop.advance(ms: 2000)
        #expect(log.take().isEmpty)

        h.finish()
    }

    @Test func dropPendingDropsTheWaitingGenerationAndKeepsTheRunningOne() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "k")
        try registry.task("k", id: "a", policy: .keepRunning) { context in
            try? await context.clock.sleep(for: .milliseconds(100))
            context.commit { log.add("a landed") }
        }
        loop.run()
        try registry.task("k", id: "b", policy: .keepRunning) { _ in log.add("b ran") }
        loop.run()
        try registry.dropPending("k")  // Escape
        loop.advance(ms: 200)
        #expect(log.take() == ["a landed"], "the running generation goes on; the dropped one never runs")
        #expect(
            phases.take() == ["g1 running", "g2 waiting", "g2 cancelled(pendingDropped)", "g1 finished"],
            "the dropped generation never runs; the running one ends as it would")
        // The identity is forgotten: "b" again runs again, and nothing is left to drop.
        try registry.dropPending("k")
        try registry.task("k", id: "b", policy: .keepRunning) { _ in log.add("b ran") }
        loop.run()
        #expect(log.take() == ["b ran"])
        #expect(try registry.counters.cancelled == 1)
        h.finish()
    }

    @Test func controlsFromAnotherThreadArePostedLikeDeclarations() async throws {
        let loop = UVLoop(name: "controls")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        try registry.task("a", id: 1, debounce: .seconds(3600)) { _ in }
        try registry.runNow("a")
        await registry.flush()
        #expect(try await registry.countersSnapshot().started == 1)
        try registry.task("b", id: 1, debounce: .seconds(3600)) { _ in }
        try registry.dropPending("b")
        try registry.task("c", id: 1) { context in try await context.clock.sleep(for: .seconds(3600)) }
        await registry.flush()
        try registry.cancel("c")
        await registry.flush()
        #expect(try await registry.snapshot(of: "b")?.phase.description == "cancelled(pendingDropped)")
        #expect(try await registry.snapshot(of: "c")?.phase.description == "cancelled(cancelledByCaller)")
        await registry.shutdown()
        await loop.shutdown()
        #expect(throws: RegistryError.shutDown) { try registry.cancel("a") }
    }
}
