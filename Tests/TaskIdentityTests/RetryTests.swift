import Testing
import UVLoop

@testable import TaskIdentity

/// `retry:`: a failed run tried again after a backoff on the loop's timers, in virtual time.
@Suite("Retries: a failed run tried again, on the loop's timers")
struct RetryTests {
    struct Flaky: Error {}

    static func policy(_ attempts: Int, jitter: Double = 0) throws -> RetryPolicy {
        try RetryPolicy(
            maxAttempts: attempts, initialDelay: .milliseconds(10), multiplier: 2, maxDelay: .milliseconds(15),
            jitter: jitter)
    }

    static func snapshot<Key>(_ registry: TaskRegistry<Key>, _ key: Key) -> TaskSnapshot? {
        registry.record(key, .main).map(TaskSnapshot.init(record:))
    }

    @Test func aFailingRunIsTriedAgainAfterEachWaitThenFails() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        try registry.task("a", id: 1, retry: Self.policy(4)) { context in
            log.add("attempt \(context.attempt) at \(loop.now.nanoseconds / 1_000_000)")
            throw Flaky()
        }
        loop.run()
        #expect(Self.snapshot(registry, "a")?.waitReason == .retry)
        #expect(Self.snapshot(registry, "a")?.attempt == 2)
        #expect(try registry.phase(of: "a")?.description == "waiting")
        loop.advance(ms: 9)
        #expect(log.take() == ["attempt 1 at 0"], "not before its wait")
        // Waits of 10, then 20 capped at 15, then 15.
        loop.advance(ms: 100)
        #expect(log.take() == ["attempt 2 at 10", "attempt 3 at 25", "attempt 4 at 40"])
        #expect(try registry.phase(of: "a")?.description.hasPrefix("failed") == true)
        #expect(
            phases.take() == [
                "g1 running", "g1 waiting", "g1 running", "g1 waiting", "g1 running", "g1 waiting", "g1 running",
                "g1 failed(Flaky())",
            ])
        let counters = try registry.counters
        #expect(counters.started == 4 && counters.restarted == 0 && counters.retries == 3)
        #expect(counters.failed == 1 && counters.liveGenerations == 0)
        h.finish()
    }

    @Test func aRunThatSucceedsOnARetryFinishes() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1, retry: Self.policy(3)) { context in
            log.add("attempt \(context.attempt)")
            if context.attempt == 1 { throw Flaky() }
            context.commit(result: "ok")
        }
        loop.advance(ms: 50)
        #expect(log.take() == ["attempt 1", "attempt 2"])
        #expect(try registry.phase(of: "a")?.description == "finished")
        #expect(try registry.result(of: "a", as: String.self) == "ok")
        #expect(try registry.counters.retries == 1 && registry.counters.failed == 0)
        h.finish()
    }

    @Test func aNewIdentityCancelsTheWaitAndStartsFromTheFirstAttempt() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        func declare(_ id: Int) throws {
            try registry.task("a", id: id, retry: Self.policy(3)) { context in
                log.add("\(id) attempt \(context.attempt) at \(loop.now.nanoseconds / 1_000_000)")
                throw Flaky()
            }
        }
        try declare(1)
        loop.advance(ms: 5)
        try declare(2)
        loop.advance(ms: 100)
        #expect(log.take() == ["1 attempt 1 at 0", "2 attempt 1 at 5", "2 attempt 2 at 15", "2 attempt 3 at 30"])
        #expect(phases.take().prefix(4) == ["g1 running", "g1 waiting", "g1 cancelled(identityChanged)", "g2 running"])
        let counters = try registry.counters
        #expect(counters.cancelled == 1 && counters.failed == 1 && counters.retries == 3, "g1 waited once, g2 twice")
        h.finish()
    }

    @Test func cancellationsAndTimeOutsAreNeverRetried() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("cancelled", id: 1, retry: Self.policy(3)) { _ in
            log.add("cancelled runs")
            throw CancellationError()
        }
        try registry.task("slow", id: 1, timeout: .milliseconds(5), retry: Self.policy(3)) { context in
            log.add("slow runs")
            try await context.clock.sleep(for: .seconds(1))
        }
        loop.advance(ms: 100)
        #expect(log.take().sorted() == ["cancelled runs", "slow runs"])
        #expect(try registry.phase(of: "cancelled")?.description == "cancelled(actionCancelled)")
        #expect(try registry.phase(of: "slow")?.description == "cancelled(timedOut)")
        #expect(try registry.counters.retries == 0)
        h.finish()
    }

    @Test func removeCancelAndDropPendingEndTheWait() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        for key in ["removed", "cancelled", "dropped"] {
            try registry.task(key, id: 1, retry: Self.policy(3)) { _ in
                log.add(key)
                throw Flaky()
            }
        }
        loop.run()
        #expect(try registry.openTimerCount == 3, "a retry timer each")
        try registry.remove("removed")
        try registry.cancel("cancelled")
        try registry.dropPending("dropped")
        loop.advance(ms: 100)
        #expect(log.take().sorted() == ["cancelled", "dropped", "removed"], "one attempt each")
        #expect(try registry.phase(of: "cancelled")?.description == "cancelled(cancelledByCaller)")
        #expect(try registry.phase(of: "dropped")?.description == "cancelled(pendingDropped)")
        #expect(try registry.openTimerCount == 0, "no retry timer is left")
        h.finish()
    }

    @Test func aSynchronousTemplateIsRetriedToo() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let publish = try TaskTemplate<String>.synchronous(retry: Self.policy(2)) { key, context in
            log.add("\(key) attempt \(context.attempt) at \(loop.now.nanoseconds / 1_000_000)")
            if context.attempt == 1 { throw Flaky() }
        }
        try registry.task("a", id: 1, template: publish)
        loop.advance(ms: 20)
        #expect(log.take() == ["a attempt 1 at 0", "a attempt 2 at 10"])
        #expect(try registry.phase(of: "a")?.description == "finished")
        h.finish()
    }

    @Test func jitterShortensEachWaitByUpToItsShare() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let policy = try RetryPolicy(
            maxAttempts: 2, initialDelay: .milliseconds(100), maxDelay: .milliseconds(100), jitter: 0.5)
        for key in 0..<200 {
            try registry.task(key, id: 1, retry: policy) { context in
                if context.attempt == 2 { log.add("\(loop.now.nanoseconds / 1_000_000)") }
                throw Flaky()
            }
        }
        loop.advance(ms: 200)
        let retriedAt = log.take().compactMap { Int($0) }
        #expect(retriedAt.count == 200)
        #expect(retriedAt.allSatisfy { (50...100).contains($0) }, "waits of 50 to 100 ms")
        #expect(Set(retriedAt).count > 10, "spread out, not all at once")
        h.finish()
    }

    @Test func aPolicyOutOfRangeIsRefused() throws {
        #expect(throws: RegistryError.invalidRetryPolicy("maxAttempts must be 1 through 1000000 (got 0)")) {
            try RetryPolicy(maxAttempts: 0)
        }
        #expect(throws: RegistryError.self) { try RetryPolicy(initialDelay: .milliseconds(-1)) }
        #expect(throws: RegistryError.self) { try RetryPolicy(multiplier: 0.5) }
        #expect(throws: RegistryError.self) { try RetryPolicy(multiplier: .nan) }
        #expect(throws: RegistryError.self) { try RetryPolicy(initialDelay: .seconds(2), maxDelay: .seconds(1)) }
        #expect(throws: RegistryError.self) { try RetryPolicy(jitter: 1.5) }
        let policy = try RetryPolicy(initialDelay: .milliseconds(100), multiplier: 3, maxDelay: .seconds(1))
        #expect(policy.delay(beforeAttempt: 2) == .milliseconds(100))
        #expect(policy.delay(beforeAttempt: 3) == .milliseconds(300))
        #expect(policy.delay(beforeAttempt: 4) == .milliseconds(900))
        #expect(policy.delay(beforeAttempt: 5) == .seconds(1))
        #expect(RegistryError.invalidRetryPolicy("x").code == .invalidRetryPolicy)
    }
}
