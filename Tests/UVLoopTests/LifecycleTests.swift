import CLibUV
import Testing

@testable import UVLoop

@Suite("UVLoop lifecycle and errors")
struct LifecycleTests {
    @Test func executeBeforeStartIsATypedError() throws {
        let loop = UVLoop()
        #expect(throws: LoopError(.notStarted, operation: "UVLoop.execute")) { try loop.execute {} }
        try loop.syncShutdown()
        #expect(loop.isShutDown)
    }

    @Test func startingTwiceIsATypedError() throws {
        let loop = UVLoop()
        try loop.start()
        #expect(throws: LoopError(.alreadyStarted, operation: "UVLoop.start")) { try loop.start() }
        try loop.syncShutdown()
        #expect(throws: LoopError(.shutDown, operation: "UVLoop.start")) { try loop.start() }
    }

    @Test func useAfterShutdownThrowsAndNeverHangs() async throws {
        let loop = UVLoop()
        try loop.start()
        try loop.syncShutdown()
        try loop.syncShutdown()  // idempotent
        await loop.shutdown()
        #expect(throws: LoopError(.shutDown, operation: "UVLoop.execute")) { try loop.execute {} }
        await #expect(throws: LoopError.self) { try await loop.clock.sleep(for: .milliseconds(1)) }
        await #expect(throws: LoopError.self) { try await loop.submit { 1 } }
        // A task preferring the dead loop still runs to completion (on the enqueuing thread).
        let value = await Task(executorPreference: loop) { 7 }.value
        #expect(value == 7)
    }

    @Test func lifecycleGoesThroughItsStatesInOrder() throws {
        let loop = UVLoop(name: "lifecycle")
        #expect(loop.lifecycleState == .notStarted)
        try loop.start()
        #expect(loop.lifecycleState == .running)
        let seenByHook = Locked<(UVLoop.Lifecycle, Bool)?>(nil)
        loop.onShutdown {
            // Hooks run on the loop thread before it begins shutting down: work is still taken.
            let canExecute = (try? loop.execute {}) != nil
            seenByHook.withLock { $0 = (loop.lifecycleState, canExecute) }
        }
        try loop.syncShutdown()
        let seen = seenByHook.withLock { $0 }
        #expect(seen?.0 == .shutdownRequested)
        #expect(seen?.1 == true)
        #expect(loop.lifecycleState == .shutDown)
        #expect(loop.isShutDown)
    }

    @Test func aLoopThatNeverStartedGoesStraightToShutDown() throws {
        let loop = UVLoop(name: "never-started")
        try loop.syncShutdown()
        #expect(loop.lifecycleState == .shutDown)
        #expect(throws: LoopError(.shutDown, operation: "UVLoop.start")) { try loop.start() }
    }

    @Test func loopThreadOnlyCallsAreCheckedOffTheLoop() async throws {
        try await withStartedLoop { loop in
            #expect(throws: LoopError(.calledOffLoopThread, operation: "UVLoop.makeTimer")) {
                _ = try loop.makeTimer {}
            }
            let onLoop = try await loop.submit { () -> LoopError? in
                do { try loop.syncShutdown() } catch let error as LoopError { return error } catch { return nil }
                return nil
            }
            #expect(onLoop?.code == .calledOnLoopThread)
        }
    }

    @Test func libuvErrorsCarryCodeNameAndMessage() {
        let error = LoopError(.libuv(-22), operation: "uv_timer_start")
        #expect(error.libuvCode == -22)
        #expect(error.libuvName == "EINVAL")
        #expect(error.libuvMessage == "invalid argument")
        #expect(error.description == "uv_timer_start: EINVAL (invalid argument)")
        #expect(LoopError(.shutDown, operation: "x").libuvName == nil)
    }

    @Test func shutdownWithPendingJobsTimersAndSleepersLeavesNothingBehind() async throws {
        let loop = UVLoop(name: "shutdown")
        try loop.start()
        let ranJobs = LoopConfined(0)
        let sleepers = (0..<10).map { _ in
            Task(executorPreference: loop) { () -> String in
                do {
                    try await loop.clock.sleep(for: .seconds(3600))
                    return "woke"
                } catch is CancellationError {
                    return "cancelled"
                } catch {
                    return "other: \(error)"
                }
            }
        }
        let timers = try await loop.submit { () -> Int in
            // Timers the loop does not own: the shutdown closes them anyway.
            var kept: [UVTimer] = []
            for index in 0..<20 {
                let timer = try loop.makeUVTimer {}
                try timer.start(after: .seconds(Int64(60 + index)))
                kept.append(timer)
            }
            leakedForTest.value = kept
            for _ in 0..<1000 { try loop.execute { ranJobs.value += 1 } }
            return kept.count
        }
        #expect(timers == 20)
        // Wait until every sleeper has armed its timer, so the shutdown finds them asleep.
        while try await loop.submit({ loop.services.sleepers.count }) < 10 { await Task.yield() }
        // Wake-up and idle handles, the 20 timers, and the one timer all sleeps share.
        #expect(loop.liveHandleCount == 2 + 20 + 1)

        try loop.syncShutdown()

        for sleeper in sleepers { #expect(await sleeper.value == "cancelled") }
        #expect(ranJobs.value == 1000)
        #expect(loop.loopCloseResult == 0)
        #expect(loop.liveHandleCount == 0)
        let kept = leakedForTest.value
        #expect(kept.allSatisfy { !$0.isActive })
        #expect(throws: LoopError(.shutDown, operation: "UVTimer.start")) { try kept[0].start(after: .zero) }
        leakedForTest.value = []
    }
}

/// Keeps timers alive past the closure that made them, to prove shutdown closes them.
let leakedForTest = LoopConfined<[UVTimer]>([])
