import Testing
import UVLoop

@testable import TaskIdentity

/// Regression tests for defects found by using the registry as a new user would.
@Suite("Registry lifecycle: deadlines at the end of time, release, shutdown from inside, removal")
struct LifecycleDefectTests {
    /// A registry created on a loop that has already shut down is shut down too: declaring
    /// throws, as after the registry's own shutdown, and no action runs anywhere.
    @Test func declaringOnAShutDownTestLoopThrows() throws {
        let loop = TestLoop()
        loop.shutdown()
        let registry = TaskRegistry<String>(loop: loop)
        let log = EventLog()
        #expect(throws: RegistryError.shutDown) {
            try registry.task("a", id: 1) { _ in log.add("ran") }
        }
        #expect(throws: RegistryError.shutDown) {
            try registry.task("b", id: 1, debounce: .seconds(1)) { _ in log.add("ran") }
        }
        #expect(throws: RegistryError.shutDown) { try registry.remove("a") }
        loop.run()
        #expect(log.take() == [])
        #expect(try registry.isShutDown)
        #expect(try registry.counters.declared == 0)
    }

    /// A registry with a debounce timer, dropped with its test loop and no shutdown at all,
    /// leaves nothing alive (no cycle through the deadline queue's timer).
    @Test func aRegistryAndItsTestLoopDroppedWithoutShutdownAreFreed() throws {
        weak var weakLoop: TestLoop?
        weak var weakCore: RegistryCore?
        do {
            let loop = TestLoop()
            weakLoop = loop
            let registry = TaskRegistry<String>(loop: loop)
            weakCore = registry.core
            try registry.task("a", id: 1, debounce: .seconds(1)) { _ in }
            loop.run()
        }
        #expect(weakCore == nil)
        #expect(weakLoop == nil)
    }

    /// Near the end of the clock's range, deadlines saturate: they come late (never), not early.
    @Test func deadlinesNearTheEndOfTheClockNeverFireEarly() throws {
        let start = UInt64.max - 1_000
        let loop = TestLoop(startingAt: LoopInstant(nanoseconds: start))
        let registry = TaskRegistry<String>(loop: loop)
        let log = EventLog()
        try registry.task("debounced", id: 1, debounce: .seconds(10)) { _ in log.add("debounced ran") }
        try registry.task("slow", id: 1, progressDelay: .seconds(10)) { context in
            try await context.clock.sleep(for: .milliseconds(0))
            try await Task.sleep(for: .seconds(3600))  // never ends on its own: cancelled at shutdown
        }
        try registry.task("throttled", id: 1, throttle: .seconds(10)) { _ in log.add("throttled g1") }
        let delayed = try TaskTemplate<String>.synchronous(after: .seconds(10)) { key, _ in log.add("\(key) ran") }
        try registry.task("delayed", id: 1, template: delayed)
        loop.run()
        #expect(log.take() == ["throttled g1"])
        try registry.task("throttled", id: 2, throttle: .seconds(10)) { _ in log.add("throttled g2") }
        loop.advance(to: LoopInstant(nanoseconds: start + 1))
        loop.advance(to: LoopInstant(nanoseconds: start + 500))
        #expect(log.take() == [])
        #expect(try registry.phase(of: "debounced")?.description == "waiting")
        #expect(try registry.phase(of: "throttled")?.description == "waiting")
        #expect(try registry.phase(of: "delayed")?.description == "running")
        #expect(try registry.showsProgress(of: "slow") == false)
        registry.startShutdown()
        loop.run()
        #expect(try registry.counters.runningActions == 0)
        loop.shutdown()
    }

    /// Released without `shutdown()`, a registry acts like a view disappearing: its running
    /// actions are cancelled, its timers closed, and its phase streams end.
    @Test func aRegistryReleasedWithoutShutdownCancelsItsTasksAndEndsItsStreams() throws {
        let loop = TestLoop()
        let log = EventLog()
        let streamEnded = Confined(false)
        let timersWithRegistry = Confined(0)
        weak var weakCore: RegistryCore?
        do {
            let registry = TaskRegistry<String>(loop: loop)
            weakCore = registry.core
            try registry.task("a", id: 1) { _ in
                do { try await loop.clock.sleep(for: .seconds(3600)) } catch { log.add("a: \(error)") }
            }
            try registry.task("b", id: 1, debounce: .seconds(1)) { _ in log.add("b ran") }
            let stream = registry.phaseUpdates(of: "a")
            Task(executorPreference: loop) {
                for await _ in stream {}
                streamEnded.value = true
            }
            loop.run()
            #expect(try registry.phase(of: "a")?.description == "running")
            timersWithRegistry.value = loop.openTimerCount  // the debounce queue's, and the clock's sleeps'
        }
        loop.run()
        #expect(log.take() == ["a: CancellationError()"])
        #expect(streamEnded.value)
        loop.advance(by: .seconds(2))
        #expect(log.take() == [])  // the debounced task was cancelled, not started
        #expect(weakCore == nil)  // nothing holds the core once its runs have ended
        #expect(loop.openTimerCount == timersWithRegistry.value - 1)  // the debounce queue's is closed
        loop.shutdown()
    }

    /// `await shutdown()` from inside one of the registry's own actions returns once every other
    /// action has ended; the calling action then ends too.
    @Test func shutdownAwaitedInsideAnOwnActionReturnsOnceEverythingElseHasEnded() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("other", id: 1) { _ in
            do { try await loop.clock.sleep(for: .seconds(3600)) } catch { log.add("other cancelled") }
        }
        loop.run()
        try registry.task("closer", id: 1) { [registry] _ in
            await registry.shutdown()
            log.add("shutdown returned")
        }
        loop.run()
        #expect(log.take() == ["other cancelled", "shutdown returned"])
        #expect(try registry.counters.runningActions == 0)
        #expect(try registry.phase(of: "closer") == nil)
        h.finish()
    }

    /// The only running actions await `shutdown()` themselves, one before and one after
    /// shutdown began: both calls return, the phase streams end, and a later shutdown returns.
    @Test func actionsAwaitingShutdownThemselvesLetItFinish() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let streamEnded = Confined(false)
        let stream = registry.phaseUpdates(of: "first")
        Task(executorPreference: loop) {
            for await _ in stream {}
            streamEnded.value = true
        }
        try registry.task("second", id: 1) { [registry] _ in
            // Cancelled by the shutdown the first action starts; awaits it from its cleanup.
            do { try await loop.clock.sleep(for: .seconds(3600)) } catch {}
            await registry.shutdown()
            log.add("second returned")
        }
        loop.run()
        try registry.task("first", id: 1) { [registry] _ in
            await registry.shutdown()
            log.add("first returned")
        }
        loop.run()
        #expect(Set(log.take()) == ["first returned", "second returned"])
        #expect(streamEnded.value)
        #expect(try registry.counters.runningActions == 0)
        let outside = Confined(false)
        Task(executorPreference: loop) { [registry] in
            await registry.shutdown()
            outside.value = true
        }
        loop.run()
        #expect(outside.value)
        h.finish()
    }

    /// `awaitPrevious` across remove and re-declare: the removed task's cancelled run still
    /// holds the new slot's first run back until it ends, so two runs of one task never overlap.
    @Test func awaitPreviousWaitsForTheRemovedSlotsRunToEnd() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let release = Confined<CheckedContinuation<Void, Never>?>(nil)
        try registry.task("k", id: 1, policy: .awaitPrevious) { _ in
            log.add("g1 start")
            // Ignores cancellation until released, as cleanup that must finish would.
            await withCheckedContinuation { release.value = $0 }
            log.add("g1 end")
        }
        loop.run()
        try registry.remove("k")
        try registry.task("k", id: 2, policy: .awaitPrevious) { _ in log.add("new slot start") }
        loop.run()
        #expect(log.take() == ["g1 start"])
        #expect(try registry.phase(of: "k")?.description == "waiting")
        release.value!.resume()
        loop.run()
        #expect(log.take() == ["g1 end", "new slot start"])
        #expect(try registry.phase(of: "k")?.description == "finished")
        h.finish()
    }

    /// Under `cancelPrevious`, a re-declared slot starts at once, as a view that appears again
    /// does, while the removed slot's cancelled run is still ending.
    @Test func cancelPreviousStartsARedeclaredSlotAtOnce() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let release = Confined<CheckedContinuation<Void, Never>?>(nil)
        try registry.task("k", id: 1) { _ in
            await withCheckedContinuation { release.value = $0 }
            log.add("g1 end")
        }
        loop.run()
        try registry.remove("k")
        try registry.task("k", id: 2) { _ in log.add("new slot start") }
        loop.run()
        #expect(log.take() == ["new slot start"])
        release.value!.resume()
        loop.run()
        #expect(log.take() == ["g1 end"])
        h.finish()
    }
}
