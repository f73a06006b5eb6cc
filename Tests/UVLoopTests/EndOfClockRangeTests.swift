import Testing

@testable import UVLoop

@Suite("Deadlines near the end of the clock's range saturate, never wrap")
struct EndOfClockRangeTests {
    static let nearTheEnd = LoopInstant(nanoseconds: UInt64.max - 5)

    @Test func nanosecondsPlusSaturateAtTheEndOfTheRange() {
        #expect(LoopInstant.nanoseconds(1, plus: 2) == 3)
        #expect(LoopInstant.nanoseconds(UInt64.max - 5, plus: 5) == UInt64.max)
        #expect(LoopInstant.nanoseconds(UInt64.max - 5, plus: 10_000_000_000) == UInt64.max)
        #expect(LoopInstant.nanoseconds(UInt64.max, plus: UInt64.max) == UInt64.max)
    }

    @Test func aTimerForLaterDoesNotFireEarlyNearTheEnd() throws {
        let loop = TestLoop(startingAt: Self.nearTheEnd)
        let fired = LoopConfined(0)
        let timer = try loop.makeTimer { fired.value += 1 }
        try timer.start(after: .seconds(10))
        #expect(loop.nextDeadline == LoopInstant(nanoseconds: .max))
        loop.advance(by: .nanoseconds(1))
        #expect(fired.value == 0, "a wrapped deadline would lie in the past and fire here")
        #expect(timer.isActive)
        loop.advance(by: .seconds(10))  // time itself saturates at the end of the range
        #expect(fired.value == 1)
        timer.close()
    }

    @Test func aSleepForLaterDoesNotEndEarlyNearTheEnd() {
        let loop = TestLoop(startingAt: Self.nearTheEnd)
        let woke = LoopConfined(false)
        Task(executorPreference: loop) {
            try await loop.clock.sleep(for: .seconds(10))
            woke.value = true
        }
        loop.run()
        loop.advance(by: .nanoseconds(1))
        #expect(!woke.value, "a wrapped deadline would lie in the past and end the sleep here")
        loop.advance(by: .seconds(10))
        #expect(woke.value)
        loop.shutdown()
    }
}
