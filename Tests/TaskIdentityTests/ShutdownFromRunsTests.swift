import Testing
import UVLoop

@testable import TaskIdentity

/// `shutdown()` awaited from inside the registry's own runs (their actions and their child
/// tasks, which inherit the run's task-local marker), and a registry released without
/// shutdown, which must end its phase streams exactly as shutdown does.
@Suite("shutdown from inside runs, and release")
struct ShutdownFromRunsTests {
    /// An action that is waiting, for `other` to keep shutdown from quiescing at once.
    private func declareSleeper(_ h: RegistryHarness<String>) throws {
        let (loop, log) = (h.loop, h.log)
        try h.registry.task("other", id: 1) { _ in
            do { try await loop.clock.sleep(for: .seconds(3600)) } catch { log.add("other cancelled") }
        }
    }

    @Test func shutdownAwaitedInAnAsyncLetChildOfAnActionReturns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try declareSleeper(h)
        loop.run()
        try registry.task("closer", id: 1) { [registry] _ in
            async let closed: Void = registry.shutdown()
            await closed
            log.add("shutdown returned in the child")
        }
        loop.run()
        #expect(log.take() == ["other cancelled", "shutdown returned in the child"])
        #expect(try registry.counters.runningActions == 0)
        h.finish()
    }

    @Test func shutdownAwaitedFromTwoChildTasksOfOneActionReturnsToBoth() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try declareSleeper(h)
        loop.run()
        try registry.task("closer", id: 1) { [registry] _ in
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<2 { group.addTask(executorPreference: loop) { await registry.shutdown() } }
            }
            log.add("both returned")
        }
        loop.run()
        // Counted once: two children of one run are one run awaiting shutdown.
        #expect(log.take() == ["other cancelled", "both returned"])
        #expect(try registry.counters.runningActions == 0)
        h.finish()
    }

    @Test func shutdownAwaitedFromARunCancelledBeforeShutdownBeganReturns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let cleanUp = Confined<CheckedContinuation<Void, Never>?>(nil)
        try declareSleeper(h)
        try registry.task("closer", id: 1, policy: .cancelPrevious) { [registry] _ in
            // Cancelled by id 2 below; its cleanup then awaits shutdown, once the test says so.
            do { try await loop.clock.sleep(for: .seconds(3600)) } catch {}
            await withCheckedContinuation { cleanUp.value = $0 }
            async let closed: Void = registry.shutdown()
            await closed
            log.add("g1 returned")
        }
        loop.run()
        try registry.task("closer", id: 2) { _ in
            do { try await loop.clock.sleep(for: .seconds(3600)) } catch { log.add("g2 cancelled") }
        }
        loop.run()
        #expect(try registry.phase(of: "closer")?.description == "running")
        cleanUp.value!.resume()
        loop.run()
        #expect(Set(log.take()) == ["other cancelled", "g2 cancelled", "g1 returned"])
        #expect(try registry.counters.runningActions == 0)
        h.finish()
    }

    @Test func aTaskThatOutlivesItsRunWaitsForEveryActionLikeAnyCaller() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let finishOther = Confined<CheckedContinuation<Void, Never>?>(nil)
        try registry.task("other", id: 1) { _ in
            // Ignores cancellation until released, as cleanup that must finish would.
            await withCheckedContinuation { finishOther.value = $0 }
            log.add("other ended")
        }
        try registry.task("spawner", id: 1) { [registry] _ in
            // Inherits the run's marker, but the run is over when it calls shutdown.
            Task(executorPreference: loop) {
                await registry.shutdown()
                log.add("shutdown returned")
            }
            log.add("spawner ended")
        }
        loop.run()
        #expect(log.take() == ["spawner ended"])  // shutdown waits for "other"
        finishOther.value!.resume()
        loop.run()
        #expect(log.take() == ["other ended", "shutdown returned"])
        h.finish()
    }

    /// A task that outlived its run is not counted as that run, even while its task has
    /// another, cancelled run still ending: shutdown waits for that run and for every other
    /// action.
    @Test func aTaskThatOutlivesItsRunIsNotCountedWhileItsTaskHasAnotherRunEnding() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let gate = Confined<CheckedContinuation<Void, Never>?>(nil)
        let finishSecond = Confined<CheckedContinuation<Void, Never>?>(nil)
        let finishOther = Confined<CheckedContinuation<Void, Never>?>(nil)
        try registry.task("other", id: 1) { _ in
            await withCheckedContinuation { finishOther.value = $0 }  // ignores cancellation
            log.add("other ended")
        }
        try registry.task("spawner", id: 1) { [registry] _ in
            Task(executorPreference: loop) {
                await withCheckedContinuation { gate.value = $0 }
                await registry.shutdown()
                log.add("shutdown returned")
            }
        }
        loop.run()  // g1 of "spawner" has ended; its task waits at the gate
        try registry.task("spawner", id: 2) { _ in
            await withCheckedContinuation { finishSecond.value = $0 }  // ignores cancellation
            log.add("g2 ended")
        }
        loop.run()
        gate.value!.resume()
        loop.run()
        #expect(log.take() == [])  // shutdown began; g2 (cancelled) and "other" still run
        finishSecond.value!.resume()
        loop.run()
        #expect(log.take() == ["g2 ended"])  // "other" still runs: shutdown waits
        finishOther.value!.resume()
        loop.run()
        #expect(log.take() == ["other ended", "shutdown returned"])
        h.finish()
    }

    /// The phases each stream hears when the registry shuts down with a task in each state:
    /// over, waiting out a debounce, running its second generation.
    private func phasesAtTheEnd(releasing: Bool) throws -> [String: [String]] {
        let loop = TestLoop()
        var recorders: [String: PhaseRecorder] = [:]
        do {
            let registry = TaskRegistry<String>(loop: loop)
            try registry.task("over", id: 1) { _ in }
            try registry.task("debounced", id: 1, debounce: .seconds(1)) { _ in }
            for id in 1...2 {
                try registry.task("running", id: id) { _ in
                    do { try await loop.clock.sleep(for: .seconds(3600)) } catch {}
                }
            }
            loop.run()
            for key in ["over", "debounced", "running"] { recorders[key] = PhaseRecorder(registry, key) }
            loop.run()
            if !releasing { registry.startShutdown() }
        }
        loop.run()
        let phases = recorders.mapValues(\.phases)
        for recorder in recorders.values { #expect(recorder.hasEnded) }
        loop.shutdown()
        return phases
    }

    @Test func aReleasedRegistryEndsEachStreamOnItsRunsGenerationAsShutdownDoes() throws {
        let shutDown = try phasesAtTheEnd(releasing: false)
        let released = try phasesAtTheEnd(releasing: true)
        #expect(
            shutDown == [
                "over": [], "debounced": ["g1 cancelled(registryShutDown)"],
                "running": ["g2 cancelled(registryShutDown)"],
            ])
        #expect(released == shutDown)
    }
}
