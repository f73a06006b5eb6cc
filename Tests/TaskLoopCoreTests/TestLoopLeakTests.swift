import Testing

@testable import TaskLoopCore

@Suite("A TestLoop dropped without shutdown is freed")
struct TestLoopLeakTests {
    /// Sleeps one virtual second on `loop`'s clock, completing the sleep by advancing time.
    private func sleepOnce(on loop: TestLoop) {
        let woke = LoopConfined(false)
        Task(executorPreference: loop) {
            try await loop.clock.sleep(for: .seconds(1))
            woke.value = true
        }
        loop.run()
        loop.advance(by: .seconds(1))
        #expect(woke.value)
    }

    @Test func aLoopDroppedAfterAClockSleepIsDeinitialised() {
        weak var weakLoop: TestLoop?
        do {
            let loop = TestLoop()
            weakLoop = loop
            sleepOnce(on: loop)
            // The sleep scheduler's timer stays open until shutdown, which never comes here.
            #expect(loop.openTimerCount == 1)
        }
        #expect(weakLoop == nil, "nothing but the test held the loop: a reference cycle keeps it alive")
    }

    @Test func aTimerThatOutlivesItsLoopIsClosed() throws {
        var timer: (any LoopTimer)?
        do {
            let loop = TestLoop()
            timer = try loop.makeTimer {}
            try timer?.start(after: .seconds(1))
        }
        #expect(timer?.isActive == false)
        #expect(throws: LoopError(.handleClosed, operation: "TestTimer.start")) { try timer?.start(after: .zero) }
    }
}
