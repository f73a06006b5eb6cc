import Testing
import UVLoop

@testable import TaskIdentity

/// `staleAfter:` and `refreshEvery:`: a result that goes stale, and a poller per key, in virtual
/// time.
@Suite("Stale results and refreshes: the same identity run again")
struct StaleAndRefreshTests {
    struct Flaky: Error {}

    @Test func theSameIdentityRunsAgainOnlyOnceItsResultIsStale() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare() throws {
            try registry.task("a", id: "q", staleAfter: .milliseconds(50)) { context in
                log.add("run g\(context.generation) at \(loop.now.nanoseconds / 1_000_000)")
                try await context.clock.sleep(for: .milliseconds(10))
                context.commit(result: context.generation)
            }
        }
        try declare()
        loop.advance(ms: 5)
        try declare()  // still running: nothing
        loop.advance(ms: 54)  // ended at 10; 59 is 49 ms after
        try declare()  // fresh: nothing
        loop.advance(ms: 1)
        #expect(log.take() == ["run g1 at 0"])
        try declare()  // 50 ms after its end: stale
        loop.run()
        #expect(log.take() == ["run g2 at 60"])
        #expect(try registry.generation(of: "a") == 2)
        loop.advance(ms: 10)
        #expect(try registry.result(of: "a", as: UInt64.self) == 2)
        let counters = try registry.counters
        #expect(counters.unchanged == 2 && counters.started == 2 && counters.restarted == 1)
        h.finish()
    }

    @Test func aRefreshRunsTheCurrentIdentityAgainAfterEachEndUntilReplacedOrRemoved() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ id: String) throws {
            try registry.task("a", id: id, refreshEvery: .milliseconds(100)) { context in
                log.add("\(id) g\(context.generation) at \(loop.now.nanoseconds / 1_000_000)")
                try await context.clock.sleep(for: .milliseconds(10))
                if context.generation == 2 { throw Flaky() }  // a failure does not stop the poller
            }
        }
        try declare("x")
        loop.advance(ms: 250)
        #expect(log.take() == ["x g1 at 0", "x g2 at 110", "x g3 at 220"])
        try declare("y")  // replaces x's run; y polls from its own end
        loop.advance(ms: 120)
        #expect(log.take() == ["y g4 at 250", "y g5 at 360"])
        try registry.remove("a")
        loop.advance(ms: 500)
        #expect(log.take().isEmpty, "removed: no more refreshes")
        #expect(try registry.openTimerCount == 0)
        h.finish()
    }

    @Test func cancelStopsTheRefreshesAndATimedOutRunIsRefreshed() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("slow", id: 1, timeout: .milliseconds(5), refreshEvery: .milliseconds(20)) { context in
            log.add("slow at \(loop.now.nanoseconds / 1_000_000)")
            try await context.clock.sleep(for: .seconds(1))
        }
        try registry.task("cancelled", id: 1, refreshEvery: .milliseconds(20)) { _ in
            log.add("cancelled at \(loop.now.nanoseconds / 1_000_000)")
        }
        loop.advance(ms: 30)
        #expect(log.take().sorted() == ["cancelled at 0", "cancelled at 20", "slow at 0", "slow at 25"])
        try registry.cancel("cancelled")
        try registry.cancel("slow")
        loop.advance(ms: 100)
        #expect(log.take().isEmpty)
        for key in ["slow", "cancelled"] {
            #expect(try #require(registry.record(key, .main)).rare?.refresh == nil, "no refresh state is left")
        }
        #expect(registry.core.optionsTable.taskTimersOpen == 0, "no refresh timer is left")
        h.finish()
    }

    @Test func aNegativeStaleAfterOrAnEmptyRefreshIsRefused() throws {
        let h = RegistryHarness<String>()
        #expect(throws: RegistryError.invalidDuration(name: "staleAfter", .milliseconds(-1))) {
            try h.registry.task("a", id: 1, staleAfter: .milliseconds(-1)) { _ in }
        }
        #expect(throws: RegistryError.invalidDuration(name: "refreshEvery", .zero)) {
            try h.registry.task("a", id: 1, refreshEvery: .zero) { _ in }
        }
        #expect(
            RegistryError.invalidDuration(name: "refreshEvery", .zero).description
                == "refreshEvery must be at least 1 nanosecond (got 0.0 seconds)")
        h.finish()
    }
}
