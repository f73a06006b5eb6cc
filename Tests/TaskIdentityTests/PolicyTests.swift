import Testing
import UVLoop

@testable import TaskIdentity

@Suite("Restart policies, throttle, failures and errors")
struct PolicyTests {
    @Test func keepRunningLetsTheRunFinishThenRunsTheLatestId() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "save")
        func save(_ version: Int) throws {
            try registry.task("save", id: version, policy: .keepRunning) { context in
                log.add("save v\(version)")
                try await context.clock.sleep(for: .milliseconds(100))
                context.commit { log.add("saved v\(version)") }
            }
        }
        try save(1)
        loop.advance(ms: 10)
        try save(2)
        try save(3)  // replaces 2, which never runs
        loop.advance(ms: 500)
        #expect(log.take() == ["save v1", "saved v1", "save v3", "saved v3"])
        #expect(
            phases.take() == [
                "g1 running", "g2 waiting", "g2 cancelled(supersededByPolicy)", "g3 waiting", "g1 finished",
                "g3 running", "g3 finished",
            ])
        #expect(try registry.counters.coalesced == 1)
        h.finish()
    }

    @Test func awaitPreviousStartsOnlyOnceTheCancelledRunHasEnded() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        // The first run's cleanup takes a while and ignores cancellation (say, a flush to disk).
        let cleanup = Confined<CheckedContinuation<Void, Never>?>(nil)
        try registry.task("file", id: 1, policy: .awaitPrevious) { _ in
            log.add("write 1")
            await withCheckedContinuation { cleanup.value = $0 }
            log.add("closed 1")
        }
        loop.run()
        try registry.task("file", id: 2, policy: .awaitPrevious) { _ in log.add("write 2") }
        try registry.task("file", id: 3, policy: .awaitPrevious) { _ in log.add("write 3") }
        loop.advance(ms: 100)
        #expect(log.take() == ["write 1"], "nothing overlaps the cancelled run")
        #expect(try registry.phase(of: "file")?.description == "waiting")
        cleanup.value!.resume()
        loop.run()
        #expect(log.take() == ["closed 1", "write 3"])
        #expect(try registry.counters.coalesced == 1)
        h.finish()
    }

    @Test func throttleStartsAtOnceThenTheLatestAtTheEndOfTheWindow() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func refresh(_ id: Int) throws {
            try registry.task("feed", id: id, throttle: .milliseconds(100)) { context in
                log.add("refresh \(id) at \(context.clock.now.nanoseconds / 1_000_000)")
            }
        }
        try refresh(1)
        loop.advance(ms: 10)
        try refresh(2)
        loop.advance(ms: 10)
        try refresh(3)
        loop.advance(ms: 200)
        try refresh(4)  // a window has passed: at once
        loop.run()
        #expect(log.take() == ["refresh 1 at 0", "refresh 3 at 100", "refresh 4 at 220"])
        #expect(try registry.counters.coalesced == 1)
        h.finish()
    }

    @Test func debounceRearmsOnEveryChangeAndCreatesNoTaskMeanwhile() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        for change in 1...100 {
            try registry.task(7, id: change, debounce: .milliseconds(50)) { _ in log.add("run \(change)") }
            loop.advance(ms: 10)
        }
        #expect(try registry.counters.started == 0)
        #expect(try registry.counters.runningActions == 0)
        loop.advance(ms: 39)
        #expect(log.events.isEmpty)
        loop.advance(ms: 1)
        #expect(log.take() == ["run 100"])
        #expect(try registry.counters.coalesced == 99)
        h.finish()
    }

    @Test func changesWithinOneTurnStartOneTaskForTheLast() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "burst")
        for id in 1...3 {
            try registry.task("burst", id: id) { _ in log.add("run \(id)") }
        }
        #expect(try registry.phase(of: "burst")?.description == "waiting", "it starts at the end of the turn")
        #expect(try registry.counters.started == 0)
        loop.run()
        #expect(log.take() == ["run 3"])
        #expect(
            phases.take() == [
                "g1 cancelled(supersededByPolicy)", "g2 cancelled(supersededByPolicy)", "g3 running", "g3 finished",
            ])
        #expect(try registry.counters.started == 1)
        #expect(try registry.counters.coalesced == 2)
        h.finish()
    }

    @Test func aTemplateDeclaresLikeAClosureAndHandsTheActionItsKey() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let load = try TaskTemplate<String>(debounce: .milliseconds(10)) { key, context in
            try await context.clock.sleep(for: .milliseconds(5))
            context.commit { log.add("\(key) \(context.id(as: Int.self)!) g\(context.generation)") }
            #expect(context.key(as: String.self) == key)
            #expect(context.key(as: Int.self) == nil)
        }
        try registry.task("a", id: 1, template: load)
        try registry.task("b", id: 1, template: load)
        loop.advance(ms: 5)
        try registry.task("a", id: 2, template: load)  // inside the window: re-armed
        try registry.task("b", id: 1, template: load)  // unchanged
        loop.advance(ms: 100)
        #expect(log.take().sorted() == ["a 2 g2", "b 1 g1"])
        let counters = try registry.counters
        #expect(counters.coalesced == 1 && counters.unchanged == 1 && counters.finished == 2)
        #expect(throws: RegistryError.invalidDuration(name: "throttle", .seconds(-1))) {
            _ = try TaskTemplate<String>(throttle: .seconds(-1)) { _, _ in }
        }
        h.finish()
    }

    @Test func failuresAreFailedButCancellationNeverIs() throws {
        struct Broken: Error {}
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        try registry.task("a", id: 1) { _ in throw Broken() }
        try registry.task("b", id: 1) { _ in throw CancellationError() }
        try registry.task("c", id: 1) { context in
            do { try await context.clock.sleep(for: .seconds(1)) } catch {}
            throw Broken()  // thrown after the registry cancelled it
        }
        loop.run()
        try registry.task("c", id: 2) { _ in }
        loop.run()
        let failed = try registry.phase(of: "a")
        #expect({ if case .failed(let error) = failed { return error is Broken } else { return false } }())
        #expect(try registry.phase(of: "b")?.description == "cancelled(actionCancelled)")
        #expect(try registry.phase(of: "c")?.description == "finished")
        let counters = try registry.counters
        #expect(counters.failed == 1)
        #expect(counters.cancelled == 2)
        h.finish()
    }

    @Test func badInputAndUseAfterShutdownAreTypedErrors() async throws {
        let h = RegistryHarness<String>()
        let registry = h.registry
        #expect(throws: RegistryError.invalidDuration(name: "debounce", .milliseconds(-1))) {
            try registry.task("x", id: 1, debounce: .milliseconds(-1)) { _ in }
        }
        #expect(throws: RegistryError.invalidDuration(name: "progressDelay", .seconds(-2))) {
            try registry.task("x", id: 1, progressDelay: .seconds(-2)) { _ in }
        }
        #expect(try !registry.contains("x"), "a rejected declaration leaves no trace")
        try registry.remove("never declared")
        h.finish()
        #expect(throws: RegistryError.shutDown) { try registry.task("x", id: 1) { _ in } }
        #expect(throws: RegistryError.shutDown) { try registry.remove("x") }
        await registry.shutdown()  // idempotent, and returns at once
    }

    @Test func shutdownCancelsEverythingAndLeavesNothingBehind() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry) = (h.loop, h.registry)
        let ended = Confined(0)
        for key in 0..<40 {
            let action: TaskAction = { context in
                defer { ended.value += 1 }
                try await context.clock.sleep(for: .seconds(60))
            }
            switch key % 4 {
            case 0: try registry.task(key, id: key, action: action)  // running
            case 1: try registry.task(key, id: key, debounce: .seconds(1), action: action)  // waiting
            case 2: try registry.task(key, id: key, progressDelay: .milliseconds(5), action: action)
            default:
                try registry.task(key, id: key, throttle: .seconds(1), action: action)
                loop.run()
                try registry.task(key, id: key + 1, throttle: .seconds(1), action: action)  // throttled
            }
        }
        loop.advance(ms: 10)
        let phases = PhaseRecorder(registry, 1)
        loop.run()
        // Running: keys 0 mod 4 and 2 mod 4. Debounced and throttled ones wait.
        #expect(try registry.counters.runningActions == 20)
        // One debounce queue, one progress queue, one throttle timer per throttled task.
        #expect(try registry.openTimerCount == 1 + 1 + 10)
        h.finish()
        #expect(ended.value == 30, "every started action ran to its end (10 cancelled by the throttled re-declaration)")
        #expect(phases.take() == ["g1 cancelled(registryShutDown)"])
    }
}

@Suite("Registry on real loops")
struct RealLoopTests {
    @Test func callsFromOtherThreadsArePostedInOrderAndApplied() async throws {
        let loop = UVLoop(name: "registry")
        try loop.start()
        let registry = TaskRegistry<Int>(loop: loop)
        let committed = Confined([Int: Int]())
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<4 {
                group.addTask {
                    for change in 1...2_000 {
                        let key = producer * 1000 + change % 100
                        try! registry.task(key, id: change) { context in
                            context.commit { committed.value[key] = change }
                        }
                    }
                }
            }
        }
        await registry.flush()
        await Task(executorPreference: loop) { await Task.yield() }.value
        // Let every started action finish.
        while try await registry.countersSnapshot().runningActions > 0 { await Task.yield() }
        let counters = try await registry.countersSnapshot()
        #expect(counters.declared == 8_000)
        #expect(counters.liveSlots == 400)
        #expect(counters.liveGenerations == 0)
        let finals = try await loop.submit { committed.value }
        for producer in 0..<4 {
            for slot in 0..<100 {
                let last = (1...2_000).last { $0 % 100 == slot }!
                #expect(finals[producer * 1000 + slot] == last, "the last posted identity committed")
            }
        }
        await registry.shutdown()
        try loop.syncShutdown()
        #expect(loop.loopCloseResult == 0 && loop.liveHandleCount == 0)
    }

    @Test func aLoopShuttingDownFirstShutsItsRegistryDownCleanly() async throws {
        let loop = UVLoop(name: "registry")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        let running = registry.phaseUpdates(of: "running")
        let debounced = registry.phaseUpdates(of: "debounced")
        try registry.task("running", id: 1) { context in try await context.clock.sleep(for: .seconds(3600)) }
        try registry.task("debounced", id: 1, debounce: .seconds(3600)) { _ in }
        await registry.flush()
        var runningPhases: [String] = []
        for await update in running {
            runningPhases.append(update.description)
            if update.description == "g1 running" { break }
        }
        try loop.syncShutdown()  // the registry is never told; the loop's shutdown hook is
        for await update in running { runningPhases.append(update.description) }
        var debouncedPhases: [String] = []
        for await update in debounced { debouncedPhases.append(update.description) }
        #expect(runningPhases.last == "g1 cancelled(registryShutDown)")
        #expect(debouncedPhases.last == "g1 cancelled(registryShutDown)")
        #expect(loop.loopCloseResult == 0 && loop.liveHandleCount == 0)
        #expect(throws: RegistryError.shutDown) { try registry.task("late", id: 1) { _ in } }
    }
}
