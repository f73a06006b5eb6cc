import Testing
import UVLoop

@testable import TaskIdentity

@Suite("Synchronous templates: runs without a Swift task")
struct SynchronousTests {
    @Test func aDelayedRunIsRunningForItsDelayThenCallsItsActionOnce() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        let work = try TaskTemplate<String>.synchronous(after: .milliseconds(10)) { key, context in
            log.add("\(key) \(context.id(as: Int.self)!) g\(context.generation) at \(loop.now.nanoseconds / 1_000_000)")
            #expect(context.isCurrent)
            context.commit { log.add("commit g\(context.generation)") }
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 9)
        #expect(log.take() == [])
        #expect(try registry.phase(of: "a")?.description == "running")
        loop.advance(ms: 1)
        #expect(log.take() == ["a 1 g1 at 10", "commit g1"])
        #expect(phases.take() == ["g1 running", "g1 finished"])
        try registry.task("a", id: 1, template: work)  // unchanged: nothing
        loop.advance(ms: 50)
        #expect(log.take() == [])
        let counters = try registry.counters
        #expect(counters.started == 1 && counters.finished == 1 && counters.unchanged == 1)
        #expect(counters.runningActions == 0 && counters.liveGenerations == 0)
        h.finish()
    }

    @Test func aNewIdCancelsTheWaitingRunWhoseActionIsNeverCalled() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        let work = try TaskTemplate<String>.synchronous(after: .milliseconds(10)) { _, context in
            log.add("g\(context.generation) at \(loop.now.nanoseconds / 1_000_000)")
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 6)
        try registry.task("a", id: 2, template: work)  // restarts: g1 ends now, g2 runs its own 10 ms
        #expect(try registry.counters.runningActions == 0, "g1 ended at once; g2 starts at the end of the turn")
        loop.advance(ms: 9)
        #expect(log.take() == [])
        loop.advance(ms: 1)
        #expect(log.take() == ["g2 at 16"])
        #expect(phases.take() == ["g1 running", "g1 cancelled(identityChanged)", "g2 running", "g2 finished"])
        let counters = try registry.counters
        #expect(counters.started == 2 && counters.restarted == 1 && counters.cancelled == 1 && counters.finished == 1)
        h.finish()
    }

    @Test func withoutADelayTheActionRunsAtTheEndOfTheTurnForTheLastId() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous { key, context in
            context.commit { log.add("\(key)=\(context.id(as: Int.self)!)") }
        }
        for id in 1...5 { try registry.task("a", id: id, template: work) }
        try registry.task("b", id: 1, template: work)
        #expect(log.take() == [], "starts wait for the end of the turn")
        loop.run()
        #expect(log.take() == ["a=5", "b=1"])
        let counters = try registry.counters
        #expect(counters.coalesced == 4 && counters.started == 2 && counters.finished == 2)
        #expect(try registry.phase(of: "a")?.description == "finished")
        h.finish()
    }

    @Test func anActionThatThrowsFailsOrIsCancelled() throws {
        struct Broken: Error {}
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        let work = try TaskTemplate<String>.synchronous(after: .milliseconds(1)) { key, _ in
            if key == "fails" { throw Broken() }
            throw CancellationError()
        }
        try registry.task("fails", id: 1, template: work)
        try registry.task("gives up", id: 1, template: work)
        loop.advance(ms: 1)
        let failed = try registry.phase(of: "fails")
        #expect({ if case .failed(let error) = failed { return error is Broken } else { return false } }())
        #expect(try registry.phase(of: "gives up")?.description == "cancelled(actionCancelled)")
        #expect(try registry.counters.failed == 1 && registry.counters.cancelled == 1)
        h.finish()
    }

    @Test func anActionMayDeclareAndRemoveItsOwnSlot() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = Confined<TaskTemplate<String>?>(nil)
        work.value = try TaskTemplate<String>.synchronous(after: .milliseconds(5)) { key, context in
            let id = context.id(as: Int.self)!
            log.add("\(key) ran \(id)")
            if id == 1 {
                // Restarting its own slot from inside the action cancels this run, whose
                // commit must then be dropped.
                try registry.task(key, id: 2, template: work.value!)
                #expect(!context.isCurrent)
                #expect(!context.commit { log.add("stale commit") })
            } else {
                try registry.remove(key)
            }
        }
        try registry.task("a", id: 1, template: work.value!)
        loop.advance(ms: 20)
        #expect(log.take() == ["a ran 1", "a ran 2"])
        #expect(try !registry.contains("a"))
        let counters = try registry.counters
        #expect(counters.cancelled == 2, "g1 by the new id, g2 by its removal")
        #expect(counters.staleCommitsDropped == 1 && counters.finished == 0)
        #expect(counters.runningActions == 0 && counters.liveGenerations == 0)
        work.value = nil
        h.finish()
    }

    @Test func keepRunningLetsTheDelayedRunFinishThenRunsTheLatestId() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous(policy: .keepRunning, after: .milliseconds(10)) { _, context in
            log.add("\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 3)
        try registry.task("a", id: 2, template: work)
        try registry.task("a", id: 3, template: work)
        loop.advance(ms: 30)
        #expect(log.take() == ["1 at 10", "3 at 20"])
        #expect(try registry.counters.coalesced == 1 && registry.counters.finished == 2)
        h.finish()
    }

    @Test func progressTurnsOnOnlyForARunStillWaitingAfterTheProgressDelay() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        let work = try TaskTemplate<String>.synchronous(progressDelay: .milliseconds(4), after: .milliseconds(10)) {
            _, _ in
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 3)
        #expect(try !registry.showsProgress(of: "a"))
        loop.advance(ms: 1)
        #expect(try registry.showsProgress(of: "a"))
        loop.advance(ms: 6)
        #expect(try !registry.showsProgress(of: "a") && registry.phase(of: "a")?.description == "finished")
        // A run shorter than the progress delay never shows progress.
        let quick = try TaskTemplate<String>.synchronous(progressDelay: .milliseconds(4), after: .milliseconds(3)) {
            _, _ in
        }
        let phases = PhaseRecorder(registry, "b")
        try registry.task("b", id: 1, template: quick)
        loop.advance(ms: 10)
        #expect(phases.take() == ["g1 running", "g1 finished"])
        h.finish()
    }

    @Test func anActionWithoutDelayMayRemoveItsOwnSlot() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        let work = try TaskTemplate<String>.synchronous { key, context in
            try registry.remove(key)
            #expect(!context.commit { log.add("stale commit") })
            #expect(try registry.counters.runningActions == 1, "its action is still running")
        }
        try registry.task("a", id: 1, template: work)
        loop.run()
        #expect(log.take() == [])
        #expect(phases.take() == ["g1 running", "g1 cancelled(removed)"])
        let counters = try registry.counters
        #expect(counters.cancelled == 1 && counters.runningActions == 0 && counters.liveGenerations == 0)
        h.finish()
    }

    @Test func shutdownFromInsideAnActionQuiescesOnlyOnceTheActionReturns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let quiesced = Confined(false)
        let work = try TaskTemplate<String>.synchronous(after: .milliseconds(5)) { key, _ in
            registry.startShutdown()
            registry.core.whenQuiesced { quiesced.value = true }
            log.add("\(key): quiesced \(quiesced.value), running \(try registry.counters.runningActions)")
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 4)
        try registry.task("b", id: 1, template: work)
        loop.advance(ms: 1)
        #expect(log.take() == ["a: quiesced false, running 1"], "b was cancelled by the shutdown, never called")
        #expect(quiesced.value, "quiescence follows the action's return")
        #expect(try registry.phase(of: "a") == nil && registry.openTimerCount == 0)
        let counters = try registry.counters
        #expect(counters.cancelled == 2 && counters.runningActions == 0 && counters.liveGenerations == 0)
        h.finish()
    }

    @Test func throttleHoldsSynchronousRunsLikeTasks() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous(throttle: .milliseconds(10)) { _, context in
            log.add("\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
        }
        try registry.task("a", id: 1, template: work)
        loop.run()
        loop.advance(ms: 2)
        try registry.task("a", id: 2, template: work)
        loop.advance(ms: 2)
        try registry.task("a", id: 3, template: work)
        loop.advance(ms: 20)
        #expect(log.take() == ["1 at 0", "3 at 10"])
        #expect(try registry.counters.coalesced == 1 && registry.counters.finished == 2)
        h.finish()
    }

    @Test func shutdownCancelsWaitingRunsAndClosesTheirTimer() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "a")
        let work = try TaskTemplate<String>.synchronous(after: .seconds(1)) { _, _ in log.add("ran") }
        for key in ["a", "b", "c"] { try registry.task(key, id: 1, template: work) }
        loop.advance(ms: 10)
        #expect(try registry.openTimerCount == 1, "one timer for every run of this delay")
        registry.startShutdown()
        loop.run()
        #expect(phases.take() == ["g1 running", "g1 cancelled(registryShutDown)"])
        loop.advance(by: .seconds(5))
        #expect(log.take() == [])
        #expect(try registry.counters.cancelled == 3)
        h.finish()
    }

    @Test func aStoredResultOutlivesItsRunUntilANewerOneOrRemoval() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        let stale = Confined<TaskContext?>(nil)
        let work = try TaskTemplate<String>.synchronous(after: .milliseconds(10)) { _, context in
            #expect(context.commit(result: "result \(context.id(as: Int.self)!)"))
        }
        try registry.task("a", id: 1, template: work)
        #expect(try registry.result(of: "a", as: String.self) == nil)
        loop.advance(ms: 10)
        #expect(try registry.result(of: "a", as: String.self) == "result 1")
        #expect(try registry.result(of: "a", as: Int.self) == nil, "another type reads as nil")
        // A Swift-task run of the same slot that is restarted before it stores: dropped.
        try registry.task("a", name: "load", id: 1) { context in
            stale.value = context
            try? await context.clock.sleep(for: .seconds(1))
        }
        loop.run()
        try registry.task("a", name: "load", id: 2) { _ in }
        loop.run()
        #expect(stale.value?.commit(result: "stale") == false)
        #expect(try registry.result(of: "a", name: "load", as: String.self) == nil)
        #expect(try registry.counters.staleCommitsDropped == 1)
        // A new id: the old result stays readable until the new run stores its own.
        try registry.task("a", id: 2, template: work)
        loop.advance(ms: 5)
        #expect(try registry.result(of: "a", as: String.self) == "result 1")
        loop.advance(ms: 5)
        #expect(try registry.result(of: "a", as: String.self) == "result 2")
        try registry.remove("a")
        #expect(try registry.result(of: "a", as: String.self) == nil)
        try registry.task("a", id: 2, template: work)
        #expect(try registry.result(of: "a", as: String.self) == nil, "a new slot starts without a result")
        stale.value = nil
        h.finish()
    }

    @Test func aNegativeDelayIsATypedError() {
        #expect(throws: RegistryError.invalidDuration(name: "after", .milliseconds(-1))) {
            _ = try TaskTemplate<String>.synchronous(after: .milliseconds(-1)) { _, _ in }
        }
    }
}
