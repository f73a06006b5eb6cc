import Dispatch
import Foundation
import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

/// A task executor the test drives by hand: jobs wait until `runOffLoop(during:)` runs them on a
/// thread of its own, while the test loop is running (so that `inLoop` is false there, as it
/// is on a real executor's threads).
final class ManualExecutor: TaskExecutor, Sendable {
    // `Locked` (a pthread mutex) rather than `Mutex`, which ThreadSanitizer misreports here.
    private let jobs = Locked<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    var queuedJobCount: Int { jobs.withLock { $0.count } }

    /// Runs every job queued now (and those they queue) on another thread, from inside a turn
    /// of `loop`, then lets `loop` run what those jobs sent back to it.
    func runOffLoop(during loop: TestLoop) throws {
        try loop.execute { [self] in
            let finished = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                while let batch = self.jobs.withLock({ jobs -> [UnownedJob]? in
                    defer { jobs = [] }
                    return jobs.isEmpty ? nil : jobs
                }) {
                    for job in batch { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
                }
                finished.signal()
            }
            finished.wait()
        }
        loop.run()
    }
}

@Suite("Executor choice: actions off the loop, bookkeeping on it")
struct ExecutorChoiceTests {
    @Test func anActionOffTheLoopIsCancelledOnANewIdAndItsStaleCommitIsDropped() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let executor = ManualExecutor()
        let phases = PhaseRecorder(registry, "a")
        let template = try TaskTemplate<String>(executor: .executor(executor)) { key, context in
            let id = context.id(as: Int.self)!
            log.add("action \(id) inLoop=\(loop.inLoop) cancelled=\(Task.isCancelled)")
            let landed = await context.commitOnLoop { log.add("commit \(id) inLoop=\(loop.inLoop)") }
            log.add("action \(id) landed=\(landed) inLoop=\(loop.inLoop)")
        }
        try registry.task("a", id: 1, template: template)
        loop.run()  // g1 starts on the loop and hops to the executor
        #expect(executor.queuedJobCount == 1)
        #expect(try registry.phase(of: "a")?.description == "running")
        try registry.task("a", id: 2, template: template)  // g1 cancelled now; g2 starts this turn
        loop.run()
        #expect(executor.queuedJobCount == 2)
        try executor.runOffLoop(during: loop)  // both actions run, their commits hop to the loop
        try executor.runOffLoop(during: loop)  // both resume off the loop, complete, post their ends
        #expect(
            log.take() == [
                "action 1 inLoop=false cancelled=true", "action 2 inLoop=false cancelled=false",
                "commit 2 inLoop=true", "action 1 landed=false inLoop=false", "action 2 landed=true inLoop=false",
            ])
        #expect(phases.take() == ["g1 running", "g1 cancelled(identityChanged)", "g2 running", "g2 finished"])
        let counters = try registry.counters
        #expect(counters.staleCommitsDropped == 1)
        #expect(counters.started == 2 && counters.cancelled == 1 && counters.finished == 1)
        #expect(counters.runningActions == 0 && counters.liveGenerations == 0)
        #expect(executor.queuedJobCount == 0)
        h.finish()
    }

    @Test func aPostedCommitLandsOnlyWhileCurrentAndBeforeTheRunsEnd() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let executor = ManualExecutor()
        let phases = PhaseRecorder(registry, "a")
        let template = try TaskTemplate<String>(executor: .executor(executor)) { _, context in
            let generation = context.generation
            context.postCommit { log.add("g\(generation) landed, phase \(try! registry.phase(of: "a")!)") }
        }
        try registry.task("a", id: 1, template: template)
        loop.run()
        try registry.task("a", id: 2, template: template)
        loop.run()
        try executor.runOffLoop(during: loop)
        #expect(log.take() == ["g2 landed, phase running"])
        #expect(phases.take() == ["g1 running", "g1 cancelled(identityChanged)", "g2 running", "g2 finished"])
        #expect(try registry.counters.staleCommitsDropped == 1 && registry.counters.runningActions == 0)
        #expect(executor.queuedJobCount == 0)
        h.finish()
    }

    @Test func onTheLoopAPostedCommitLandsAtOnce() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let template = try TaskTemplate<String> { _, context in
            context.postCommit { log.add("g\(context.generation) landed") }
            log.add("g\(context.generation) returns")
        }
        try registry.task("a", id: 1, template: template)
        loop.run()
        #expect(log.take() == ["g1 landed", "g1 returns"])
        #expect(try registry.counters.staleCommitsDropped == 0 && registry.counters.finished == 1)
        h.finish()
    }

    @Test func aResultCommittedOffTheLoopIsStoredOnlyWhileCurrent() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        let executor = ManualExecutor()
        let template = try TaskTemplate<String>(executor: .executor(executor)) { _, context in
            #expect(await context.isCurrentOnLoop() == (context.generation == 2))
            await context.commitOnLoop(result: "g\(context.generation)")
        }
        try registry.task("a", id: 1, template: template)
        loop.run()
        try registry.task("a", id: 2, template: template)
        loop.run()
        for _ in 0..<3 { try executor.runOffLoop(during: loop) }
        #expect(try registry.result(of: "a", as: String.self) == "g2")
        #expect(try registry.counters.staleCommitsDropped == 1)
        #expect(try registry.phase(of: "a")?.description == "finished")
        h.finish()
    }

    @Test func shutdownWaitsForAnActionOffTheLoopAndEveryPhaseEndsFinal() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let executor = ManualExecutor()
        let phases = PhaseRecorder(registry, "a")
        try registry.task("a", id: 1, executor: .executor(executor)) { context in
            log.add("action cancelled=\(Task.isCancelled)")
            throw CancellationError()
        }
        loop.run()
        let quiesced = Confined(false)
        registry.startShutdown()
        loop.run()
        registry.core.whenQuiesced { quiesced.value = true }
        #expect(try registry.phase(of: "a") == nil, "shutdown removed the slot")
        #expect(try registry.counters.runningActions == 1, "the action has not ended yet")
        #expect(!quiesced.value)
        try executor.runOffLoop(during: loop)
        #expect(log.take() == ["action cancelled=true"])
        #expect(quiesced.value)
        #expect(phases.take() == ["g1 running", "g1 cancelled(registryShutDown)"])
        #expect(executor.queuedJobCount == 0, "the task completed where its action ended")
        h.finish()
    }

    @Test func optionsWithDifferentExecutorsAreDifferentOptions() throws {
        let first = ManualExecutor()
        let second = ManualExecutor()
        #expect(ActionExecutor.executor(first) == .executor(first))
        #expect(ActionExecutor.executor(first) != .executor(second))
        #expect(ActionExecutor.global == .global)
        #expect(ActionExecutor.global != .loop)
        #expect(ActionExecutor.loop.description == "loop")
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        // The same slot switching executor between declarations: the new id runs on the new one.
        try registry.task("a", id: 1, executor: .executor(first)) { _ in log.add("first") }
        loop.run()
        try registry.task("a", id: 2, executor: .executor(second)) { _ in log.add("second") }
        loop.run()
        try second.runOffLoop(during: loop)
        try first.runOffLoop(during: loop)
        #expect(log.take() == ["second", "first"])
        #expect(try registry.counters.finished == 1 && registry.counters.cancelled == 1)
        #expect(first.queuedJobCount == 0 && second.queuedJobCount == 0)
        // The registry's own loop as the executor is the loop: no hop, nothing for the door.
        try registry.task("b", id: 1, executor: .executor(loop)) { _ in log.add("b inLoop=\(loop.inLoop)") }
        loop.run()
        #expect(log.take() == ["b inLoop=true"])
        #expect(try registry.phase(of: "b")?.description == "finished")
        h.finish()
    }

    @Test func onTheGlobalExecutorOnlyTheLatestIdLandsAndShutdownAwaitsTheAction() async throws {
        let loop = UVLoop(name: "executor-choice")
        try loop.start()
        let registry = TaskRegistry<Int>(loop: loop)
        let landed = Locked<[Int]>([])
        let offLoop = Atomic<Int>(0)
        let template = try TaskTemplate<Int>(executor: .global) { _, context in
            let id = context.id(as: Int.self)!
            if !loop.inLoop { offLoop.add(1, ordering: .relaxed) }
            // Compute for a while without looking at cancellation: the run may be stale by now.
            var spin = 0
            for step in 0..<20_000 { spin &+= step }
            await context.commitOnLoop { landed.withLock { $0.append(id) } }
            _ = spin
        }
        // One declaration per loop turn (flush), so that every id starts and most are cancelled
        // while they compute.
        for id in 1...50 {
            try registry.task(0, id: id, template: template)
            await registry.flush()
        }
        // Slot 1's action ignores cancellation and holds until the test releases it, after
        // shutdown has begun: shutdown must not return before the action has ended.
        let (started, released, final) = (Locked(false), Locked(false), Locked(false))
        try registry.task(1, id: 0, executor: .global) { _ in
            started.withLock { $0 = true }
            while !released.withLock({ $0 }) { await Task.yield() }
            final.withLock { $0 = true }
        }
        await registry.flush()
        func phase(_ key: Int) async throws -> String? {
            try await loop.submit { try registry.phase(of: key)?.description }
        }
        while try await phase(0) != "finished" { await Task.yield() }
        while !started.withLock({ $0 }) { await Task.yield() }
        registry.startShutdown()
        while try await phase(1) != nil { await Task.yield() }  // shutdown removed the slot
        #expect(!final.withLock { $0 })
        released.withLock { $0 = true }
        await registry.shutdown()
        #expect(final.withLock { $0 }, "shutdown returned before the action ended")
        let counters = try await registry.countersSnapshot()
        #expect(counters.runningActions == 0 && counters.liveGenerations == 0)
        let order = landed.withLock { $0 }
        // Stale-proof: a commit lands only for the id current at that moment, so ids only grow.
        #expect(order == order.sorted())
        #expect(order.last == 50, "the latest id is never cancelled: its commit lands")
        #expect(order.count + Int(counters.staleCommitsDropped) == 50, "every action committed once")
        #expect(offLoop.load(ordering: .relaxed) >= 1)
        try loop.syncShutdown()
        #expect(loop.loopCloseResult == 0)
    }

    @Test func anActionOffTheLoopThatEndsAfterTheLoopShutDownEndsQuietly() async throws {
        let loop = UVLoop(name: "executor-after-shutdown")
        try loop.start()
        let registry = TaskRegistry<Int>(loop: loop)
        let (started, released) = (Locked(false), Locked(false))
        let outcome = Locked<[String]>([])
        try registry.task(1, id: 1, executor: .global) { context in
            started.withLock { $0 = true }
            while !released.withLock({ $0 }) { await Task.yield() }
            let landed = await context.commitOnLoop { outcome.withLock { $0.append("landed") } }
            let current = await context.isCurrentOnLoop()
            let stored = await context.commitOnLoop(result: 7)
            outcome.withLock { $0.append("landed=\(landed) current=\(current) stored=\(stored)") }
        }
        while !started.withLock({ $0 }) { await Task.yield() }
        await loop.shutdown()  // without the registry's shutdown: the loop's hook cancels the run
        released.withLock { $0 = true }
        while outcome.withLock({ $0.isEmpty }) { await Task.yield() }
        #expect(outcome.withLock { $0 } == ["landed=false current=false stored=false"])
        #expect(loop.loopCloseResult == 0)
    }
}
