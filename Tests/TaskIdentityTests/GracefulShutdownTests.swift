import Testing
import UVLoop

@testable import TaskIdentity

/// `shutdown(gracePeriod:)`: nothing new starts, runs under way get the grace period to
/// finish, then what still runs is cancelled. On the test loop, in virtual time.
@Suite("Graceful shutdown: a grace period for the runs under way")
struct GracefulShutdownTests {
    /// A run that finishes within the grace period ends `finished` with its commit landed; one
    /// still running at its end is cancelled (`registryShutDown`).
    @Test func runsFinishingWithinTheGracePeriodFinishAndTheOthersAreCancelledAtItsEnd() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        for (key, milliseconds) in [("quick", 100), ("slow", 5_000)] {
            try registry.task(key, id: 1) { context in
                do { try await context.clock.sleep(for: .milliseconds(milliseconds)) } catch {
                    log.add("\(key) cancelled")
                    throw error
                }
                context.commit { log.add("\(key) landed") }
            }
        }
        loop.advance(ms: 10)
        registry.startShutdown(gracePeriod: .seconds(1))
        loop.advance(ms: 200)
        #expect(log.take() == ["quick landed"])
        #expect(try registry.phase(of: "quick")?.description == "finished")
        #expect(try registry.phase(of: "slow")?.description == "running")
        loop.advance(ms: 800)
        loop.run()
        #expect(log.take() == ["slow cancelled"])
        #expect(try registry.counters.finished == 1)
        #expect(try registry.counters.cancelled == 1)
        h.finish()
    }

    /// Nothing new starts: a generation waiting out its debounce ends at once, cancelled
    /// (`registryShutDown`), without running; declarations and controls are refused.
    @Test func nothingNewStartsDuringTheGracePeriod() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "waiting")
        try registry.task("waiting", id: 1, debounce: .milliseconds(500)) { _ in log.add("waiting ran") }
        try registry.task("running", id: 1) { context in
            try await context.clock.sleep(for: .seconds(2))
            log.add("running ended")
        }
        loop.advance(ms: 10)
        registry.startShutdown(gracePeriod: .seconds(10))
        loop.run()
        #expect(try registry.phase(of: "waiting")?.description == "cancelled(registryShutDown)")
        #expect(throws: RegistryError.shutDown) { try registry.task("new", id: 1) { _ in log.add("new ran") } }
        #expect(throws: RegistryError.shutDown) { try registry.runNow("waiting") }
        loop.advance(ms: 1_000)
        #expect(log.take().isEmpty)
        loop.advance(ms: 1_000)
        #expect(log.take() == ["running ended"])
        #expect(phases.take() == ["g1 waiting", "g1 cancelled(registryShutDown)"])
        #expect(try registry.counters.started == 1)
        h.finish()
    }

    /// The shutdown completes once every run has ended, before the grace period is over: the
    /// timers close, and nothing is left to cancel when it would have passed.
    @Test func theShutdownCompletesWhenTheLastRunEnds() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1) { context in
            try await context.clock.sleep(for: .milliseconds(50))
            context.commit { log.add("a landed") }
        }
        loop.advance(ms: 1)
        registry.startShutdown(gracePeriod: .seconds(60))
        loop.advance(ms: 60)
        #expect(log.take() == ["a landed"])
        #expect(try registry.openTimerCount == 0)
        #expect(registry.gracePeriodTimer == nil, "the grace period's timer closed with the shutdown")
        #expect(try registry.counters.liveSlots == 0)
        h.finish()
    }

    /// A run that fails during the grace period is not tried again.
    @Test func noRetryDuringTheGracePeriod() throws {
        struct Flaky: Error {}
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let retry = try RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(10), jitter: 0)
        try registry.task("a", id: 1, retry: retry) { context in
            log.add("attempt \(context.attempt)")
            try await context.clock.sleep(for: .milliseconds(100))
            throw Flaky()
        }
        loop.advance(ms: 1)
        registry.startShutdown(gracePeriod: .seconds(5))
        loop.advance(ms: 1_000)
        #expect(log.take() == ["attempt 1"])
        #expect(try registry.counters.failed == 1)
        #expect(try registry.counters.retries == 0)
        h.finish()
    }

    /// A second shutdown, graceful or not, during the grace period: `startShutdown()` cancels
    /// what runs at once.
    @Test func startShutdownDuringTheGracePeriodCancelsAtOnce() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1) { context in
            do { try await context.clock.sleep(for: .seconds(10)) } catch { log.add("cancelled") }
        }
        loop.advance(ms: 1)
        registry.startShutdown(gracePeriod: .seconds(60))
        registry.startShutdown(gracePeriod: .seconds(1))  // goes on as it is
        loop.advance(ms: 10)
        #expect(log.take().isEmpty)
        registry.startShutdown()
        loop.run()
        #expect(log.take() == ["cancelled"])
        #expect(try registry.counters.cancelled == 1)
        h.finish()
    }

    /// The awaiting form on a real loop: it returns once the run under way has finished on its
    /// own (no time is measured: the run waits for the test to let it go).
    @Test func awaitingAGracefulShutdownReturnsOnceTheRunHasFinished() async throws {
        let loop = UVLoop(name: "graceful")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        let (started, starter) = AsyncStream.makeStream(of: Void.self)
        try registry.task("a", id: 1) { context in
            starter.yield()
            for await _ in release { break }
            context.commit(result: "done")
        }
        for await _ in started { break }
        let shutdown = Task { await registry.shutdown(gracePeriod: .seconds(3600)) }
        // The run is let go only once the shutdown has begun on the loop.
        while try await Task(executorPreference: loop, operation: { try registry.isShutDown }).value == false {
            await Task.yield()
        }
        releaser.yield()
        await shutdown.value
        // "a" finished on its own, within the grace period: nothing was cancelled.
        let counters = try await registry.countersSnapshot()
        #expect(counters.finished == 1)
        #expect(counters.cancelled == 0)
        #expect(counters.runningActions == 0)
        #expect(throws: RegistryError.shutDown) { try registry.task("b", id: 1) { _ in } }
        await loop.shutdown()
    }
}
