import Dispatch
import Testing
import UVLoop

@testable import TaskIdentity

/// An actor whose jobs run on a loop's serial executor.
private actor PinnedToLoop {
    let loop: any TaskLoop
    private(set) var log: [Int] = []

    init(_ loop: any TaskLoop) { self.loop = loop }

    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }

    /// Appends `value`; whether it ran on the loop thread.
    func append(_ value: Int) -> Bool {
        log.append(value)
        return loop.inLoop
    }
}

/// Timers kept between the loop-thread closures of one test.
///
/// Unchecked `Sendable`: touched only on the loop thread, inside `submit` closures that run one
/// after another (ThreadSanitizer runs this suite).
private final class LoopThreadTimers: @unchecked Sendable {
    var timers: [String: any LoopTimer] = [:]
}

/// An object whose release shows that a closure holding it was released.
private final class Witness: Sendable {}

/// One contract for every loop kind (as an event-loop library runs one test suite against each
/// of its loops): the executors, `execute` and `submit` from the loop thread and from others,
/// sleeps, timers, shutdown, and a registry's restart, debounce, cancel and stale-proof commit.
@Suite("Every loop kind keeps the TaskLoop contract", .timeLimit(.minutes(1)))
struct LoopConformanceTests {
    // MARK: Executors

    @Test(arguments: LoopKind.allCases)
    func aTaskPreferringTheLoopRunsEveryPartOnTheLoopThread(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let (beforeSuspending, afterSuspending) = await Task(executorPreference: loop) { () -> (Bool, Bool) in
            let before = loop.inLoop
            await Task.yield()
            return (before, loop.inLoop)
        }.value
        #expect(beforeSuspending && afterSuspending)
        #expect(!loop.inLoop, "the test's own task is not on the loop")
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func anActorOnTheSerialExecutorRunsOnTheLoopInOrder(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let pinned = PinnedToLoop(harness.loop)
        var everyCallOnTheLoop = true
        for value in 0..<100 { everyCallOnTheLoop = await pinned.append(value) && everyCallOnTheLoop }
        #expect(everyCallOnTheLoop)
        #expect(await pinned.log == Array(0..<100))
        try await harness.shutdown()
    }

    // MARK: execute and submit

    @Test(arguments: LoopKind.allCases)
    func executeFromOtherThreadsRunsOnTheLoopInEachThreadsOrder(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let reports = LoopReports()
        let perThread = 500
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            for index in 0..<perThread {
                try! loop.execute { reports.add("\(thread) \(index) \(loop.inLoop)") }
            }
        }
        let received = await reports.next(2 * perThread)
        for thread in 0..<2 {
            let mine = received.filter { $0.hasPrefix("\(thread) ") }
            #expect(mine == (0..<perThread).map { "\(thread) \($0) true" })
        }
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func executeOnTheLoopThreadRunsAfterTheCurrentJob(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let reports = LoopReports()
        try loop.execute {
            try! loop.execute { reports.add("queued from the loop") }
            reports.add("the job that queued it")
        }
        #expect(await reports.next(2) == ["the job that queued it", "queued from the loop"])
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func submitReturnsFromOtherThreadsAndRunsAtOnceInsideAJobOnTheLoop(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        #expect(try await loop.submit { loop.inLoop })
        let reports = LoopReports()
        let answer = try await Task(executorPreference: loop) { () throws -> Int in
            try loop.execute { reports.add("queued before the submit") }
            return try await loop.submit {
                reports.add("submitted")
                return 42
            }
        }.value
        #expect(answer == 42)
        #expect(await reports.next(2) == ["submitted", "queued before the submit"])
        await #expect(throws: CancellationError.self) {
            try await loop.submit { throw CancellationError() }
        }
        try await harness.shutdown()
    }

    // MARK: Sleeps

    @Test(arguments: LoopKind.allCases)
    func aSleepNeverEndsBeforeItsDeadline(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let sleeper = Task(executorPreference: loop) { () throws -> Duration in
            let start = loop.now
            try await loop.clock.sleep(for: .milliseconds(20))
            return start.duration(to: loop.now)
        }
        try await harness.advance(by: .milliseconds(20))
        #expect(try await sleeper.value >= .milliseconds(20))
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func cancellingASleepEndsItWithCancellationError(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let reports = LoopReports()
        let sleeper = Task(executorPreference: loop) {
            reports.add("sleeping")
            try await loop.clock.sleep(for: .seconds(3600))
        }
        _ = await reports.next(1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        try await harness.shutdown()
    }

    // MARK: Timers

    @Test(arguments: LoopKind.allCases)
    func timersDueAtTheSameTimeFireInTheOrderTheyWereStarted(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let reports = LoopReports()
        let kept = LoopThreadTimers()
        try await loop.submit {
            let deadline = loop.now.advanced(by: .milliseconds(10))
            for name in ["c", "a", "b"] {
                let timer = try loop.makeTimer { reports.add(name) }
                try timer.start(at: deadline)
                kept.timers[name] = timer
            }
        }
        try await harness.advance(by: .milliseconds(10))
        #expect(await reports.next(3) == ["c", "a", "b"])
        try await loop.submit { for timer in kept.timers.values { timer.close() } }
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func reArmingReplacesTheDeadlineAndStoppingKeepsATimerFromFiring(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let reports = LoopReports()
        let kept = LoopThreadTimers()
        try await loop.submit {
            let rearmed = try loop.makeTimer { reports.add("re-armed") }
            try rearmed.start(after: .seconds(3600))
            try rearmed.start(after: .milliseconds(5))
            let stopped = try loop.makeTimer { reports.add("stopped") }
            try stopped.start(after: .milliseconds(5))
            stopped.stop()
            let last = try loop.makeTimer { reports.add("last") }
            try last.start(after: .milliseconds(10))
            kept.timers = ["re-armed": rearmed, "stopped": stopped, "last": last]
        }
        try await harness.advance(by: .milliseconds(10))
        #expect(await reports.next(2) == ["re-armed", "last"])
        let active = try await loop.submit { kept.timers.values.filter(\.isActive).count }
        #expect(active == 0, "a one-shot timer is inactive once it fired or was stopped")
        try await loop.submit { for timer in kept.timers.values { timer.close() } }
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func aClosedTimerRefusesToStartAndReleasesItsCallback(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let (code, callbackReleased) = try await loop.submit { () throws -> (LoopError.Code?, Bool) in
            var witness: Witness? = Witness()
            weak let watched = witness
            let timer = try loop.makeTimer { [witness] in _ = witness }
            witness = nil
            timer.close()
            var code: LoopError.Code?
            do { try timer.start(after: .zero) } catch { code = (error as? LoopError)?.code }
            return (code, watched == nil)
        }
        #expect(code == .handleClosed)
        #expect(callbackReleased, "closing a timer releases its callback, so a callback holding its timer is no cycle")
        try await harness.shutdown()
    }

    // MARK: Shutdown

    @Test(arguments: LoopKind.allCases)
    func shutdownRunsItsHooksOnTheLoopBeforeWakingSleepersThenRefusesWork(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let loop = harness.loop
        let reports = LoopReports()
        loop.onShutdown { reports.add("hook on the loop: \(loop.inLoop)") }
        let sleeper = Task(executorPreference: loop) {
            do {
                try await loop.clock.sleep(for: .seconds(3600))
                reports.add("sleeper: woke")
            } catch {
                reports.add("sleeper: \(type(of: error))")
            }
        }
        // The submitted closure runs after the job in which the sleeper went to sleep.
        try await loop.submit {}
        try await harness.shutdown()
        #expect(await reports.next(2) == ["hook on the loop: true", "sleeper: CancellationError"])
        await sleeper.value
        #expect(throws: LoopError.self) { try loop.execute {} }
        do {
            try loop.execute {}
        } catch {
            #expect(error.code == .shutDown)
        }
        await #expect(throws: LoopError.self) { try await loop.submit { 1 } }
        await #expect(throws: (any Error).self) { try await loop.clock.sleep(for: .milliseconds(1)) }
        // A hook registered after the shutdown runs at once, on the calling thread.
        loop.onShutdown { reports.add("late hook, on the loop: \(loop.inLoop)") }
        #expect(await reports.next(1) == ["late hook, on the loop: false"])
    }

    // MARK: A registry on the loop

    /// A registry on `harness`'s loop whose task "job" has started and sleeps for an hour; its
    /// reports say "started", then "cancelled" when the sleep is cancelled.
    private func runningJob(on harness: LoopUnderTest) async throws -> (TaskRegistry<String>, LoopReports) {
        let registry = TaskRegistry<String>(loop: harness.loop)
        let reports = LoopReports()
        try registry.task("job", id: 1) { context in
            reports.add("started")
            do { try await context.clock.sleep(for: .seconds(3600)) } catch { reports.add("cancelled") }
        }
        #expect(await reports.next(1) == ["started"])
        return (registry, reports)
    }

    @Test(arguments: LoopKind.allCases)
    func aChangedIdCancelsTheRunAndItsLateCommitIsDropped(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let registry = TaskRegistry<String>(loop: harness.loop)
        let reports = LoopReports()
        try registry.task("user", id: "old") { context in
            reports.add("started old")
            do { try await context.clock.sleep(for: .seconds(3600)) } catch {}
            reports.add("old's late commit landed: \(context.commit(result: "old"))")
        }
        #expect(await reports.next(1) == ["started old"])
        try registry.task("user", id: "new") { context in
            reports.add("new's commit landed: \(context.commit(result: "new"))")
        }
        let ends = Set(await reports.next(2))
        #expect(ends == ["old's late commit landed: false", "new's commit landed: true"])
        await registry.flush()
        let (result, phase, counters) = try await registry.loop.submit {
            (
                try registry.result(of: "user", as: String.self), try registry.phase(of: "user"),
                try registry.counters
            )
        }
        #expect(result == "new")
        #expect(phase?.description == "finished")
        #expect(counters.started == 2 && counters.restarted == 1 && counters.staleCommitsDropped == 1)
        await registry.shutdown()
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func aDebouncedBurstRunsOnlyItsLastId(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let registry = TaskRegistry<String>(loop: harness.loop)
        let reports = LoopReports()
        // Declared in one loop turn: the whole burst falls inside the window on every loop.
        try await registry.loop.submit {
            for query in ["s", "se", "sea", "sear", "search"] {
                try registry.task("box", id: query, debounce: .milliseconds(50)) { context in
                    reports.add("ran \(context.id(as: String.self)!)")
                }
            }
        }
        try await harness.advance(by: .milliseconds(50))
        #expect(await reports.next(1) == ["ran search"])
        await registry.flush()
        let counters = try await registry.countersSnapshot()
        #expect(counters.declared == 5 && counters.started == 1)
        await registry.shutdown()
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func cancelEndsTheRunAsCancelledByTheCaller(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let (registry, reports) = try await runningJob(on: harness)
        try registry.cancel("job")
        #expect(await reports.next(1) == ["cancelled"])
        await registry.flush()
        let phase = try await registry.loop.submit { try registry.phase(of: "job") }
        #expect(phase?.description == TaskPhase.cancelled(.cancelledByCaller).description)
        await registry.shutdown()
        try await harness.shutdown()
    }

    @Test(arguments: LoopKind.allCases)
    func theLoopsShutdownCancelsItsRegistrysRunsAndRefusesNewOnes(_ kind: LoopKind) async throws {
        let harness = try LoopUnderTest(kind)
        let (registry, reports) = try await runningJob(on: harness)
        try await harness.shutdown()
        #expect(await reports.next(1) == ["cancelled"])
        #expect(throws: RegistryError.self) { try registry.task("job", id: 2) { _ in } }
        await registry.shutdown()  // returns at once: already shut down with its loop
    }
}
