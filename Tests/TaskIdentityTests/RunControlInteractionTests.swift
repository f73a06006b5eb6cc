import Testing
import UVLoop

@testable import TaskIdentity

/// The run-control options together: retries with time limits, shared runs under a concurrency
/// limit, refreshes and stale results across re-declarations, in virtual time.
@Suite("Run control: the options together")
struct RunControlInteractionTests {
    struct Flaky: Error {}

    @Test func eachRetryAttemptHasItsOwnTimeLimit() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let retry = try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(10), jitter: 0)
        try registry.task("a", id: 1, timeout: .milliseconds(100), retry: retry) { context in
            log.add("attempt \(context.attempt) at \(loop.now.nanoseconds / 1_000_000)")
            if context.attempt == 1 {
                try await context.clock.sleep(for: .milliseconds(90))
                throw Flaky()
            }
            try await context.clock.sleep(for: .milliseconds(50))
            context.commit(result: "ok")
        }
        loop.advance(ms: 300)
        #expect(log.take() == ["attempt 1 at 0", "attempt 2 at 100"])
        #expect(try registry.phase(of: "a")?.description == "finished", "attempt 1's limit did not cut attempt 2")
        #expect(try registry.counters.timedOut == 0)
        h.finish()
    }

    @Test func aRetriedGenerationReplacedOnItsWayToItsNextAttemptEndsCancelled() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, _) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        let retry = try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(10), jitter: 0)
        try registry.task("busy", id: 1, limit: limit) { context in try await context.clock.sleep(for: .seconds(1)) }
        // Declared before "busy" starts: its first attempt fails at once; its retry then queues.
        try registry.task("a", id: 1, limit: limit, retry: retry) { _ in throw Flaky() }
        loop.advance(ms: 1)
        try registry.cancel("busy")
        loop.advance(ms: 1)
        try registry.task("busy", id: 2, limit: limit) { context in try await context.clock.sleep(for: .seconds(1)) }
        loop.advance(ms: 20)  // a's wait ended: it queues behind busy
        #expect(registry.record("a", .main).map(TaskSnapshot.init(record:))?.waitReason == .concurrencyLimit)
        let phases = PhaseRecorder(registry, "a")
        try registry.task("a", id: 2, limit: limit, retry: retry) { _ in }
        loop.run()
        #expect(phases.take().first == "g1 cancelled(identityChanged)", "it had run: not superseded")
        let counters = try registry.counters
        #expect(counters.coalesced == 0)
        try registry.remove("busy")
        loop.advance(ms: 10)
        h.finish()
    }

    @Test func aSlotJoiningASharedRunTakesNoPlaceOfTheLimit() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        let search = try TypedTaskTemplate<String, String>(limit: limit, sharesRuns: true) { key, query, context in
            log.add("search \(query) for \(key)")
            try await context.clock.sleep(for: .milliseconds(10))
            context.commit(result: query)
        }
        try registry.task("a", id: "q", template: search)
        loop.run()
        try registry.task("b", id: "q", template: search)
        loop.run()
        #expect(try registry.limitState(of: limit).running == 1 && registry.limitState(of: limit).queued == 0)
        loop.advance(ms: 20)
        #expect(log.take() == ["search q for a"], "b joined, not queued behind a")
        #expect(try registry.result(of: "b", as: String.self) == "q")
        #expect(try registry.limitState(of: limit).running == 0)
        h.finish()
    }

    @Test func aRefreshStopsWhenTheTaskIsDeclaredWithoutOne() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: "A", refreshEvery: .milliseconds(50)) { _ in log.add("A") }
        loop.advance(ms: 10)
        try registry.task("a", id: "B") { _ in log.add("B") }
        loop.advance(ms: 200)
        #expect(log.take() == ["A", "B"], "no refresh after B, which has none")
        #expect(try #require(registry.record("a", .main)).rare?.refresh == nil)
        #expect(registry.core.optionsTable.taskTimersOpen == 0, "no refresh timer is left")
        h.finish()
    }

    @Test func aStaleObservedIdentityRunsItsActionAgain() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let model = ImageModel()
        try registry.task("a", tracking: { model.url }, staleAfter: .milliseconds(50)) { url, _ in
            log.add("load \(url) at \(loop.now.nanoseconds / 1_000_000)")
        }
        loop.advance(ms: 60)
        try registry.task("a", tracking: { model.url }, staleAfter: .milliseconds(50)) { url, _ in
            log.add("load \(url) again at \(loop.now.nanoseconds / 1_000_000)")
        }
        loop.run()
        #expect(
            log.take() == ["load https://a.example/avatar.png at 0", "load https://a.example/avatar.png again at 60"])
        h.finish()
    }

    /// Staleness is judged under the options declared now, as for `task(_:id:…)`: an observed
    /// identity stale under its old `staleAfter`, declared again without one, does not run.
    @Test func anObservedIdentityDeclaredAgainWithoutStaleAfterDoesNotRunAgain() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let model = ImageModel()
        try registry.task("a", tracking: { model.url }, staleAfter: .milliseconds(50)) { url, _ in
            log.add("load \(url)")
        }
        loop.advance(ms: 60)
        try registry.task("a", tracking: { model.url }) { url, _ in log.add("load \(url) again") }
        loop.run()
        #expect(log.take() == ["load https://a.example/avatar.png"])
        #expect(try registry.counters.started == 1)
        h.finish()
    }
}
