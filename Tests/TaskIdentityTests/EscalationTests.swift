import Testing
import UVLoop

@testable import TaskIdentity

/// Priority escalation (SE-0462): what waits for a generation raises it. In virtual time.
@Suite("Priority escalation")
struct EscalationTests {
    @Test func aLowRunIsRaisedWhenAHighTaskAwaitsItsResult() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("report", id: 1, priority: .low) { context in
            log.add("starts at \(Task.currentPriority)")
            try await withTaskPriorityEscalationHandler {
                try await context.clock.sleep(for: .milliseconds(100))
            } onPriorityEscalated: { _, raised in
                log.add("escalated to \(raised)")
            }
            log.add("ends at \(Task.currentPriority)")
            context.commit(result: 42)
        }
        loop.advance(ms: 10)
        let answer = Confined<Int?>(nil)
        let waiter = Task(executorPreference: loop, priority: .high) {
            answer.value = try? await registry.awaitResult(of: "report", as: Int.self)
        }
        loop.advance(ms: 100)
        #expect(
            log.take() == [
                "starts at \(TaskPriority.low)", "escalated to \(TaskPriority.high)", "ends at \(TaskPriority.high)",
            ])
        #expect(answer.value == 42)
        waiter.cancel()
        h.finish()
    }

    @Test func awaitingAnUndeclaredTaskAnswersNil() async throws {
        let loop = UVLoop(name: "await-undeclared")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        #expect(try await registry.awaitResult(of: "nothing", as: Int.self) == nil)
        try registry.task("a", id: 1) { context in context.commit(result: "done") }
        await registry.flush()
        // Declared, and maybe already over: its result either way.
        #expect(try await registry.awaitResult(of: "a", as: String.self) == "done")
        await registry.shutdown()
        await loop.shutdown()
    }

    /// A queued `.low` generation moves ahead of `.medium` ones once a `.high` waiter arrives,
    /// and starts at `.high`.
    @Test func aQueuedLowGenerationMovesAheadOfMediumOnesForAHighWaiter() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        func declare(_ key: String, _ priority: TaskPriority) throws {
            try registry.task(key, id: 1, priority: priority, limit: limit) { context in
                log.add("\(key) starts at \(Task.currentPriority)")
                try await context.clock.sleep(for: .milliseconds(10))
            }
        }
        try declare("busy", .medium)
        loop.advance(ms: 1)
        try declare("m1", .medium)
        try declare("low", .low)
        try declare("m2", .medium)
        loop.advance(ms: 1)
        #expect(try registry.limitState(of: limit).queued == 3)
        let waiter = Task(executorPreference: loop, priority: .high) {
            _ = try? await registry.awaitResult(of: "low", as: Int.self)
        }
        loop.advance(ms: 100)
        #expect(
            log.take() == [
                "busy starts at \(TaskPriority.medium)", "low starts at \(TaskPriority.high)",
                "m1 starts at \(TaskPriority.medium)", "m2 starts at \(TaskPriority.medium)",
            ])
        waiter.cancel()
        h.finish()
    }

    /// Raised while in its debounce window, it joins the limit's queue at the raised priority.
    @Test func aGenerationRaisedInItsWindowQueuesAtItsRaisedPriority() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        func declare(_ key: String, _ priority: TaskPriority, debounce: Duration = .zero) throws {
            try registry.task(key, id: 1, priority: priority, debounce: debounce, limit: limit) { context in
                log.add("\(key) starts at \(Task.currentPriority)")
                try await context.clock.sleep(for: .milliseconds(10))
            }
        }
        try declare("busy", .medium)
        try declare("search", .low, debounce: .milliseconds(5))
        loop.advance(ms: 1)
        try declare("m1", .medium)
        try registry.escalate("search", to: .high)
        loop.advance(ms: 100)
        #expect(
            log.take() == [
                "busy starts at \(TaskPriority.medium)", "search starts at \(TaskPriority.high)",
                "m1 starts at \(TaskPriority.medium)",
            ])
        h.finish()
    }

    /// Each attempt of a retried generation starts raised.
    @Test func everyRetryOfARaisedGenerationStartsRaised() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        struct Flaky: Error {}
        let retry = try RetryPolicy(
            maxAttempts: 3, initialDelay: .milliseconds(10), maxDelay: .milliseconds(10), jitter: 0)
        try registry.task("a", id: 1, priority: .low, retry: retry) { context in
            log.add("attempt at \(Task.currentPriority)")
            try await context.clock.sleep(for: .milliseconds(5))
            throw Flaky()
        }
        loop.advance(ms: 1)
        try registry.escalate("a", to: .high)
        loop.advance(ms: 100)
        let attempts = log.take()
        #expect(
            attempts == ["attempt at \(TaskPriority.low)"]
                + Array(repeating: "attempt at \(TaskPriority.high)", count: 2))
        h.finish()
    }

    /// `awaitResult` answers the awaited generation's own result: nil when it failed or stored
    /// none, even with an earlier generation's result stored; `.shutDown` after shutdown.
    @Test func awaitResultAnswersOnlyTheAwaitedGenerationsOwnResult() async throws {
        let loop = UVLoop(name: "await-own-result")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        struct Broke: Error {}
        try registry.task("a", id: 1) { context in context.commit(result: 1) }
        #expect(try await registry.awaitResult(of: "a", as: Int.self) == 1)
        let release = AsyncStream.makeStream(of: Void.self)
        try registry.task("a", id: 2) { _ in
            for await _ in release.stream {}
            throw Broke()
        }
        await registry.flush()
        async let failed = registry.awaitResult(of: "a", as: Int.self)
        // Whether it subscribes before or after the failure, the awaited generation is g2.
        release.continuation.finish()
        #expect(try await failed == nil, "failed: not generation 1's result")
        try registry.task("a", id: 3) { _ in }
        await registry.flush()
        #expect(try await registry.awaitResult(of: "a", as: Int.self) == nil, "finished without a result")
        await registry.shutdown()
        await #expect(throws: RegistryError.shutDown) { try await registry.awaitResult(of: "a", as: Int.self) }
        await loop.shutdown()
    }

    /// Without a waiter the queue keeps its order: priority, then arrival.
    @Test func withoutAWaiterTheQueueKeepsItsOrder() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        for (key, priority) in [("busy", TaskPriority.medium), ("m1", .medium), ("low", .low), ("m2", .medium)] {
            try registry.task(key, id: 1, priority: priority, limit: limit) { context in
                log.add(key)
                try await context.clock.sleep(for: .milliseconds(10))
            }
        }
        loop.advance(ms: 100)
        #expect(log.take() == ["busy", "m1", "m2", "low"])
        h.finish()
    }

    @Test func aSharedRunIsRaisedWhenAJoinedSlotIsRaised() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func template(_ priority: TaskPriority) throws -> TaskTemplate<String> {
            try TaskTemplate<String>(priority: priority, sharesRuns: true) { key, context in
                log.add("\(key) runs at \(Task.currentPriority)")
                try await context.clock.sleep(for: .milliseconds(50))
                log.add("ends at \(Task.currentPriority)")
            }
        }
        let low = try template(.low)
        try registry.task("a", id: "q", template: low)
        loop.advance(ms: 10)
        try registry.task("b", id: "q", template: low)
        loop.advance(ms: 0)  // b joins a's run
        try registry.escalate("b", to: .high)
        loop.advance(ms: 100)
        #expect(log.take() == ["a runs at \(TaskPriority.low)", "ends at \(TaskPriority.high)"])
        h.finish()
    }

    /// Raised while it waits out its debounce window: its task starts raised.
    @Test func aGenerationRaisedBeforeItStartsStartsRaised() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1, priority: .low, debounce: .milliseconds(20)) { _ in
            log.add("starts at \(Task.currentPriority)")
        }
        loop.advance(ms: 10)
        try registry.escalate("a", to: .high)
        loop.advance(ms: 10)
        try registry.task("a", id: 2, priority: .low) { _ in log.add("next starts at \(Task.currentPriority)") }
        loop.advance(ms: 0)
        #expect(log.take() == ["starts at \(TaskPriority.high)", "next starts at \(TaskPriority.low)"])
        h.finish()
    }

    @Test func aHighTaskWatchingThePhasesRaisesTheRun() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1, priority: .low) { context in
            try await context.clock.sleep(for: .milliseconds(50))
            log.add("ends at \(Task.currentPriority)")
        }
        loop.advance(ms: 10)
        let watcher = Task(executorPreference: loop, priority: .high) {
            for await update in registry.phaseUpdates(of: "a") where update.phase.isFinal { break }
        }
        loop.advance(ms: 100)
        #expect(log.take() == ["ends at \(TaskPriority.high)"])
        watcher.cancel()
        h.finish()
    }
}
