import Testing
import UVLoop

@testable import TaskIdentity

/// `sharesRuns:`: slots of one template declaring equal identities share one run, in virtual
/// time.
@Suite("Shared runs: one run for equal identities of one template")
struct SharedRunTests {
    /// A template whose action logs its calls and stores the identity's upper-cased form after
    /// `ms` milliseconds.
    static func search(_ log: EventLog, _ loop: TestLoop, ms: Int = 10) throws -> TypedTaskTemplate<String, String> {
        try TypedTaskTemplate<String, String>(sharesRuns: true) { key, query, context in
            log.add("search \(query) for \(key) at \(loop.now.nanoseconds / 1_000_000)")
            try await context.clock.sleep(for: .milliseconds(ms))
            context.commit(result: query.uppercased())
        }
    }

    @Test func slotsDeclaringAnEqualIdentityJoinTheRunAndEachGetsItsResult() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let search = try Self.search(log, loop)
        let phasesB = PhaseRecorder(registry, "b")
        try registry.task("a", id: "swift", template: search)
        loop.advance(ms: 3)
        try registry.task("b", id: "swift", template: search)
        try registry.task("c", id: "nio", template: search)
        loop.advance(ms: 20)
        #expect(log.take() == ["search swift for a at 0", "search nio for c at 3"], "b joined a's run")
        for key in ["a", "b"] {
            #expect(try registry.result(of: key, as: String.self) == "SWIFT")
            #expect(try registry.phase(of: key)?.description == "finished")
        }
        #expect(try registry.result(of: "c", as: String.self) == "NIO")
        #expect(phasesB.take() == ["g1 running", "g1 finished"])
        let counters = try registry.counters
        #expect(counters.started == 3 && counters.joined == 1 && counters.finished == 3)
        h.finish()
    }

    @Test func theRunIsCancelledOnlyAfterItsLastSlotHasLeft() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let search = try TypedTaskTemplate<String, String>(sharesRuns: true) { key, query, context in
            log.add("search \(query) for \(key)")
            do { try await context.clock.sleep(for: .milliseconds(10)) } catch {
                log.add("search \(query) cancelled at \(loop.now.nanoseconds / 1_000_000)")
                throw error
            }
            log.add("served \(context.keys(as: String.self).sorted())")
            context.commit(result: query)
        }
        try registry.task("a", id: "q", template: search)
        try registry.task("b", id: "q", template: search)
        try registry.task("c", id: "q", template: search)
        loop.advance(ms: 2)
        try registry.task("a", id: "other", template: search)  // the leader moves on
        try registry.remove("b")
        loop.advance(ms: 1)
        #expect(log.take() == ["search q for a", "search other for a"], "c still holds q's run")
        loop.advance(ms: 10)
        #expect(log.take() == ["served [\"c\"]", "served [\"a\"]"])
        #expect(try registry.result(of: "c", as: String.self) == "q", "c got q's result though a started it")
        #expect(try registry.result(of: "a", as: String.self) == "other")
        // Now every slot leaves q's new run: it is cancelled at once.
        try registry.task("d", id: "q", template: search)
        try registry.task("e", id: "q", template: search)
        loop.advance(ms: 2)
        try registry.remove("d")
        loop.advance(ms: 1)
        #expect(log.take() == ["search q for d"], "e still in it")
        try registry.task("e", id: "q2", template: search)
        loop.advance(ms: 1)
        #expect(log.take() == ["search q cancelled at 16", "search q2 for e"])
        let phases = try ["d", "e"].map { try registry.phase(of: $0)?.description }
        #expect(phases == [nil, "running"])
        loop.advance(ms: 20)
        h.finish()
    }

    @Test func eachSlotsPhaseIsItsOwnAndAFailureReachesEverySlot() throws {
        struct Down: Error {}
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let failing = try TypedTaskTemplate<String, String>(sharesRuns: true) { key, _, context in
            log.add("called for \(key)")
            try await context.clock.sleep(for: .milliseconds(5))
            throw Down()
        }
        try registry.task("a", id: "q", template: failing)
        loop.advance(ms: 1)
        try registry.task("b", id: "q", template: failing)
        try registry.task("c", id: "q", template: failing)
        loop.run()
        try registry.cancel("c")
        loop.advance(ms: 10)
        #expect(log.take() == ["called for a"])
        #expect(try registry.phase(of: "a")?.description.hasPrefix("failed") == true)
        #expect(try registry.phase(of: "b")?.description.hasPrefix("failed") == true)
        #expect(try registry.phase(of: "c")?.description == "cancelled(cancelledByCaller)")
        let counters = try registry.counters
        #expect(counters.failed == 2 && counters.cancelled == 1 && counters.runningActions == 0)
        h.finish()
    }

    @Test func templatesThatDoNotShareRunEachSlotsOwnRun() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let own = try TypedTaskTemplate<String, String> { key, query, context in
            log.add("search \(query) for \(key)")
            try await context.clock.sleep(for: .milliseconds(10))
        }
        try registry.task("a", id: "q", template: own)
        try registry.task("b", id: "q", template: own)
        loop.advance(ms: 20)
        #expect(log.take() == ["search q for a", "search q for b"])
        #expect(try registry.counters.joined == 0)
        h.finish()
    }

    @Test func shutdownEndsASharedRunAndLeavesNothingBehind() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let search = try Self.search(log, loop, ms: 1_000)
        for key in ["a", "b", "c"] { try registry.task(key, id: "q", template: search) }
        loop.advance(ms: 1)
        #expect(log.take() == ["search q for a at 0"])
        let records = try ["a", "b", "c"].map { try #require(registry.record($0, .main)) }
        #expect(records.allSatisfy { $0.rare?.sharedRuns.count == 1 }, "each slot's run is in the shared run")
        h.finish()
        #expect(registry.core.sharedRuns.isEmpty && records.allSatisfy { $0.rare?.sharedRuns.isEmpty ?? true })
    }
}
