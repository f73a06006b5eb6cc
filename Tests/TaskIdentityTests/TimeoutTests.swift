import Testing
import UVLoop

@testable import TaskIdentity

/// `timeout:`: a run's time limit on the loop's timers, in virtual time.
@Suite("Time limits: a run cancelled when its timeout passes, not before")
struct TimeoutTests {
    @Test func aRunStillRunningAtItsLimitIsCancelledThenAndNotBefore() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        try registry.task("a", id: 1, timeout: .milliseconds(50)) { context in
            log.add("start at \(loop.now.nanoseconds / 1_000_000)")
            do { try await context.clock.sleep(for: .seconds(10)) } catch {
                log.add("cancelled at \(loop.now.nanoseconds / 1_000_000)")
            }
            context.commit { log.add("landed") }
        }
        loop.run()
        loop.advance(ms: 49)
        #expect(log.take() == ["start at 0"])
        #expect(try registry.phase(of: "a")?.description == "running", "1 ms before the limit")
        loop.advance(ms: 1)
        #expect(log.take() == ["cancelled at 50"], "its commit after the limit is dropped")
        #expect(try registry.phase(of: "a")?.description == "cancelled(timedOut)")
        #expect(phases.take() == ["g1 running", "g1 cancelled(timedOut)"])
        let counters = try registry.counters
        #expect(counters.cancelled == 1 && counters.timedOut == 1)
        #expect(counters.runningActions == 0 && counters.staleCommitsDropped == 1)
        // Like a failure, the task keeps its identity: the same id does not run again.
        try registry.task("a", id: 1, timeout: .milliseconds(50)) { _ in log.add("never") }
        loop.advance(ms: 100)
        #expect(log.take().isEmpty)
        #expect(registry.record("a", .main).map(TaskSnapshot.init(record:))?.phase.description == "cancelled(timedOut)")
        h.finish()
    }

    @Test func aRunThatEndsInTimeIsLeftAloneAndItsLimitComesDueStale() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1, timeout: .milliseconds(50)) { context in
            try await context.clock.sleep(for: .milliseconds(49))
            context.commit { log.add("landed at \(loop.now.nanoseconds / 1_000_000)") }
        }
        loop.advance(ms: 200)
        #expect(log.take() == ["landed at 49"])
        #expect(try registry.phase(of: "a")?.description == "finished")
        #expect(try registry.counters.cancelled == 0)
        h.finish()
    }

    @Test func eachRunHasItsOwnLimitFromItsOwnStart() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ id: Int) throws {
            try registry.task("a", id: id, timeout: .milliseconds(50)) { context in
                do { try await context.clock.sleep(for: .seconds(10)) } catch {
                    log.add("\(id) ended at \(loop.now.nanoseconds / 1_000_000)")
                }
            }
        }
        try declare(1)
        loop.advance(ms: 30)
        try declare(2)  // cancels run 1 (identityChanged); run 2's limit is 30 + 50
        loop.advance(ms: 30)
        #expect(log.take() == ["1 ended at 30"], "run 1's limit at 50 found it no longer current")
        #expect(try registry.phase(of: "a")?.description == "running")
        loop.advance(ms: 20)
        #expect(log.take() == ["2 ended at 80"])
        #expect(try registry.phase(of: "a")?.description == "cancelled(timedOut)")
        h.finish()
    }

    @Test func aGenerationAwaitingATimedOutRunStartsWhenThatRunEnds() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ id: Int) throws {
            try registry.task("a", id: id, policy: .keepRunning, timeout: .milliseconds(50)) { context in
                log.add("\(id) starts at \(loop.now.nanoseconds / 1_000_000)")
                do { try await context.clock.sleep(for: .seconds(10)) } catch {
                    log.add("\(id) ended at \(loop.now.nanoseconds / 1_000_000)")
                }
            }
        }
        try declare(1)
        loop.advance(ms: 10)
        try declare(2)  // keepRunning: waits for run 1
        loop.advance(ms: 39)
        #expect(log.take() == ["1 starts at 0"])
        #expect(try registry.phase(of: "a")?.description == "waiting")
        loop.advance(ms: 1)
        #expect(log.take() == ["1 ended at 50", "2 starts at 50"])
        #expect(try registry.phase(of: "a")?.description == "running", "the latest generation's phase")
        loop.advance(ms: 50)
        #expect(log.take() == ["2 ended at 100"])
        #expect(try registry.phase(of: "a")?.description == "cancelled(timedOut)")
        h.finish()
    }

    @Test func aSynchronousRunIsCancelledBeforeItsActionOnlyByAShorterLimit() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func work(timeout: Duration) throws -> TaskTemplate<String> {
            try .synchronous(timeout: timeout, after: .milliseconds(20)) { key, _ in
                log.add("\(key) at \(loop.now.nanoseconds / 1_000_000)")
            }
        }
        try registry.task("short", id: 1, template: work(timeout: .milliseconds(19)))
        try registry.task("equal", id: 1, template: work(timeout: .milliseconds(20)))
        try registry.task("long", id: 1, template: work(timeout: .milliseconds(21)))
        loop.advance(ms: 19)
        #expect(log.take() == [])
        #expect(try registry.phase(of: "short")?.description == "cancelled(timedOut)")
        loop.advance(ms: 5)
        #expect(log.take().sorted() == ["equal at 20", "long at 20"], "the short run's action is never called")
        #expect(try registry.phase(of: "equal")?.description == "finished")
        #expect(try registry.phase(of: "long")?.description == "finished")
        #expect(try registry.counters.runningActions == 0)
        h.finish()
    }

    @Test func aTemplatesLimitAppliesToEveryDeclarationOfIt() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let search = try TypedTaskTemplate<Int, String>(timeout: .milliseconds(100)) { key, query, context in
            do { try await context.clock.sleep(for: .milliseconds(key)) } catch {
                log.add("\(query) timed out")
                return
            }
            log.add("\(query) answered")
        }
        try registry.task(50, id: "fast", template: search)
        try registry.task(150, id: "slow", template: search)
        loop.advance(ms: 200)
        #expect(log.take().sorted() == ["fast answered", "slow timed out"])
        #expect(try registry.phase(of: 150)?.description == "cancelled(timedOut)")
        h.finish()
    }

    @Test func aLimitUnderANanosecondIsRefusedByEveryDeclaringCall() throws {
        let h = RegistryHarness<String>()
        for limit in [Duration.zero, .milliseconds(-1), .nanoseconds(1) / 2] {
            let refusal = RegistryError.invalidDuration(name: "timeout", limit)
            #expect(refusal.description.contains("timeout must be at least 1 nanosecond"))
            #expect(throws: refusal) { try h.registry.task("x", id: 1, timeout: limit) { _ in } }
            #expect(throws: refusal) { try h.registry.task("x", tracking: { 1 }, timeout: limit) { _, _ in } }
            #expect(throws: refusal) { try TaskTemplate<String>(timeout: limit) { _, _ in } }
            #expect(throws: refusal) { try TaskTemplate<String>.synchronous(timeout: limit) { _, _ in } }
            #expect(throws: refusal) { try TypedTaskTemplate<String, Int>(timeout: limit) { _, _, _ in } }
            #expect(throws: refusal) { try TypedTaskTemplate<String, Int>.synchronous(timeout: limit) { _, _, _ in } }
        }
        #expect(try h.registry.contains("x") == false, "nothing was declared")
        h.finish()
    }

    @Test func aLimitIsHeldOnlyWhileItsRunIsUnderWay() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        var records: [AnyTaskRecord] = []  // held here: a removed record keeps its rare state
        func limitsHeld() -> [Int] {
            let lists = registry.core.optionsTable.timeLimitListsForTesting
            return lists.map(\.count) + [records.filter { $0.rare?.timeLimit != nil }.count]
        }
        try registry.task("a", id: 1, timeout: .seconds(60)) { context in
            try await context.clock.sleep(for: .milliseconds(5))
        }
        try registry.task("b", id: 1, timeout: .seconds(60)) { context in
            try await context.clock.sleep(for: .seconds(1))
        }
        try registry.task("c", id: 1, timeout: .seconds(60)) { context in
            try await context.clock.sleep(for: .seconds(1))
        }
        loop.run()
        records = try ["a", "b", "c"].map { try #require(registry.record($0, .main)) }
        #expect(limitsHeld() == [3, 3])
        loop.advance(ms: 10)  // a finished
        #expect(limitsHeld() == [2, 2])
        try registry.remove("b")
        try registry.task("c", id: 2, timeout: .seconds(60)) { _ in }  // c's run 1 cancelled, run 2 ends at once
        loop.run()
        #expect(limitsHeld() == [0, 0], "no run under way holds a limit")
        #expect(registry.core.optionsTable.timeLimitListsForTesting.allSatisfy { $0.brokenInvariant() == nil })
        h.finish()
    }

    @Test func underKeepRunningAGenerationWaitingForADelayedSynchronousRunStartsWhenItTimesOut() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous(
            policy: .keepRunning, timeout: .milliseconds(10), after: .milliseconds(30)
        ) { _, context in
            log.add("\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 5)
        try registry.task("a", id: 2, template: work)  // waits for run 1
        loop.advance(ms: 5)
        // Run 1 timed out at 10 without its action; run 2 started then, and times out at 20.
        #expect(log.take() == [])
        #expect(try registry.phase(of: "a")?.description == "running")
        loop.advance(ms: 30)
        #expect(log.take() == [])
        #expect(try registry.phase(of: "a")?.description == "cancelled(timedOut)")
        #expect(try registry.counters.timedOut == 2)
        h.finish()
    }

    @Test func theTraceRecordsTheTimeOutAsTheRunsCancellation() throws {
        let h = RegistryHarness<String>()
        try h.registry.startTrace()
        try h.registry.task("a", id: 1, timeout: .milliseconds(20)) { context in
            try await context.clock.sleep(for: .seconds(1))
        }
        h.loop.advance(ms: 30)
        let lines = try #require(try h.registry.currentTrace()).lines
        #expect(
            lines == [
                "0ms a g1 declared 1",
                "0ms a g1 started",
                "20ms a g1 cancelled(timedOut)",
                "20ms a g1 ended after cancel",
            ])
        h.finish()
    }

    @Test func shutdownClosesTheLimitsTimers() throws {
        let h = RegistryHarness<String>()
        try h.registry.task("a", id: 1, timeout: .seconds(5)) { context in
            try await context.clock.sleep(for: .seconds(10))
        }
        h.loop.run()
        #expect(try h.registry.openTimerCount == 1)
        h.finish()  // checks no timer, task or job is left
    }
}
