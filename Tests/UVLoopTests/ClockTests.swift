import Testing

@testable import UVLoop

@Suite("LoopClock")
struct ClockTests {
    @Test func sleepNeverEndsEarlyOnLibuv() async throws {
        try await withStartedLoop { loop in
            let clock = loop.clock
            let early = try await Task(executorPreference: loop) { () -> [Duration] in
                var early: [Duration] = []
                for milliseconds in [0, 1, 2, 3, 5, 7, 10, 1, 0, 2] {
                    let deadline = clock.now.advanced(by: .microseconds(milliseconds * 1000 + 300))
                    try await clock.sleep(until: deadline)
                    let woke = clock.now
                    if woke < deadline { early.append(woke.duration(to: deadline)) }
                }
                return early
            }.value
            #expect(early.isEmpty, "woke early by \(early)")
            // From a task that is not on the loop, too.
            let deadline = clock.now.advanced(by: .milliseconds(3))
            try await clock.sleep(until: deadline)
            #expect(clock.now >= deadline)
        }
    }

    @Test func cancelledSleepEndsWithinOneLoopTurn() async throws {
        try await withStartedLoop { loop in
            let outcome = LoopConfined<String?>(nil)
            let sleeper = Task(executorPreference: loop) {
                do {
                    try await loop.clock.sleep(for: .seconds(3600))
                    outcome.value = "woke"
                } catch is CancellationError {
                    outcome.value = "cancelled"
                } catch {
                    outcome.value = "\(error)"
                }
            }
            while try await loop.submit({ loop.services.sleepers.count }) == 0 { await Task.yield() }
            // Cancel on the loop thread; the resumed task is queued in this same turn, so the
            // next closure the loop runs already sees its outcome.
            try await loop.submit { sleeper.cancel() }
            #expect(try await loop.submit { outcome.value } == "cancelled")
            #expect(try await loop.submit { loop.services.sleepers.count } == 0)
        }
    }

    @Test func cancellingFromAnotherThreadStopsTheTimer() async throws {
        try await withStartedLoop { loop in
            let sleeper = Task(executorPreference: loop) { try await loop.clock.sleep(for: .seconds(3600)) }
            while try await loop.submit({ loop.services.sleepers.count }) == 0 { await Task.yield() }
            sleeper.cancel()
            await #expect(throws: CancellationError.self) { try await sleeper.value }
            #expect(try await loop.submit { loop.services.sleepers.count } == 0)
            // The sleep left the heap; the one timer all sleeps share stays open until shutdown.
            #expect(loop.liveHandleCount == 3)
        }
    }

    @Test func sleepEndsExactlyAtTheDeadlineInVirtualTime() async throws {
        let loop = TestLoop()
        let ended = LoopConfined<LoopInstant?>(nil)
        let sleeper = Task(executorPreference: loop) {
            try await loop.clock.sleep(for: .seconds(1))
            ended.value = loop.now
        }
        #expect(loop.queuedWorkCount == 1, "a task preferring the loop enqueues its first job at once")
        loop.run()
        #expect(loop.activeTimerCount == 1)
        loop.advance(by: .milliseconds(999))
        #expect(ended.value == nil)
        loop.advance(by: .milliseconds(1))
        #expect(ended.value == LoopInstant(nanoseconds: 1_000_000_000))
        try await sleeper.value
    }

    @Test func cancelledSleepInVirtualTimeEndsWithoutTimePassing() async throws {
        let loop = TestLoop()
        let sleeper = Task(executorPreference: loop) { try await loop.clock.sleep(for: .seconds(60)) }
        #expect(loop.queuedWorkCount == 1, "a task preferring the loop enqueues its first job at once")
        loop.run()
        #expect(loop.activeTimerCount == 1)
        sleeper.cancel()
        loop.run()
        #expect(loop.activeTimerCount == 0)
        #expect(loop.now == LoopInstant(nanoseconds: 0))
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }

    @Test func shutdownWakesVirtualSleepersWithCancellation() async throws {
        let loop = TestLoop()
        let sleeper = Task(executorPreference: loop) { try await loop.clock.sleep(for: .seconds(60)) }
        #expect(loop.queuedWorkCount == 1, "a task preferring the loop enqueues its first job at once")
        loop.run()
        loop.shutdown()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(loop.openTimerCount == 0)
        let error = await #expect(throws: LoopError.self) { try await loop.clock.sleep(for: .seconds(1)) }
        #expect(error?.code == .shutDown)
    }

    @Test func instantArithmeticSaturates() {
        let start = LoopInstant(nanoseconds: 5)
        #expect(start.advanced(by: .seconds(-1)) == LoopInstant(nanoseconds: 0))
        #expect(LoopInstant(nanoseconds: .max - 1).advanced(by: .seconds(10)) == LoopInstant(nanoseconds: .max))
        #expect(start.duration(to: LoopInstant(nanoseconds: 15)) == .nanoseconds(10))
        #expect(LoopInstant(nanoseconds: 15).duration(to: start) == .nanoseconds(-10))
    }
}
