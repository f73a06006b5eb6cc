import CLibUV
import Testing

@testable import UVLoop

/// libuv timer edge cases, one per test, counting callbacks exactly. Each test ends with a
/// clean loop close (see `withStartedLoop`).
@Suite("UVTimer edge cases")
struct UVTimerTests {
    @Test func zeroTimeoutFiresOnceOnTheNextTurn() async throws {
        try await withStartedLoop { loop in
            let fired = LoopConfined(0)
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                let timer = keep(try loop.makeUVTimer { fired.value += 1 })
                try timer.start(after: .zero)
                #expect(fired.value == 0, "a timer never fires synchronously inside start")
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(5))
            }
            #expect(fired.value == 1)
        }
    }

    /// The clock reading a timer phase judges deadlines by is kept for one loop millisecond;
    /// a timer armed after it, for "now", must not be judged by it (it would wait one more
    /// millisecond: every benchmark turn did, at a quarter of the speed).
    @Test func aTimerArmedBetweenTimerPhasesIsJudgedByAFreshReading() async throws {
        try await withStartedLoop { loop in
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                _ = loop.timerPhaseNow()  // as a timer phase of this millisecond did
                let timer = keep(try loop.makeUVTimer {})
                let armedAt = uv_hrtime()
                try timer.start(after: .zero)
                #expect(loop.timerPhaseNow() >= armedAt, "the next timer phase reads the clock again")
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(2))
            }
        }
    }

    /// Equal deadlines fire in start order even when the later start comes after the deadline
    /// has passed (a slow turn): it used to be due at the loop's older cached time, before the
    /// timer started first (the conformance suite saw it under TSan).
    @Test func aTimerStartedAfterItsDeadlinePassedFiresAfterOnesStartedBeforeIt() async throws {
        try await withStartedLoop { loop in
            let keep = Keep(loop)
            let order = LoopConfined<[String]>([])
            try await onLoop(loop) { done in
                let deadline = loop.now.advanced(by: .milliseconds(3))
                try keep(try loop.makeUVTimer { order.value.append("first") }).start(at: deadline)
                while loop.now < deadline {}  // this turn outlasts the deadline
                try keep(try loop.makeUVTimer { order.value.append("second") }).start(at: deadline)
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(20))
            }
            #expect(order.value == ["first", "second"])
        }
    }

    @Test func hugeTimeoutDoesNotOverflow() async throws {
        try await withStartedLoop { loop in
            let fired = LoopConfined(0)
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                let forever = keep(try loop.makeUVTimer { fired.value += 1 })
                try forever.start(after: .seconds(Int64.max))
                #expect(forever.isActive)
                let atEndOfTime = keep(try loop.makeUVTimer { fired.value += 1 })
                try atEndOfTime.start(at: LoopInstant(nanoseconds: .max))
                #expect(atEndOfTime.isActive)
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(2))
            }
            #expect(fired.value == 0)
        }
    }

    @Test func stopBeforeFireNeverFires() async throws {
        try await withStartedLoop { loop in
            let fired = LoopConfined(0)
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                let timer = keep(try loop.makeUVTimer { fired.value += 1 })
                try timer.start(after: .milliseconds(1))
                timer.stop()
                #expect(!timer.isActive)
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(10))
            }
            #expect(fired.value == 0)
        }
    }

    @Test func rearmInsideItsOwnCallback() async throws {
        try await withStartedLoop { loop in
            let fired = LoopConfined(0)
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                let box = LoopConfined<UVTimer?>(nil)
                let timer = keep(
                    try loop.makeUVTimer {
                        fired.value += 1
                        if fired.value < 3 { try! box.value!.start(after: .milliseconds(1)) } else { done() }
                    })
                box.value = timer
                try timer.start(after: .zero)
            }
            #expect(fired.value == 3)
        }
    }

    @Test func doubleStopAndUseAfterClose() async throws {
        try await withStartedLoop { loop in
            let fired = LoopConfined(0)
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                let timer = keep(try loop.makeUVTimer { fired.value += 1 })
                try timer.start(after: .milliseconds(1))
                timer.stop()
                timer.stop()
                #expect(!timer.isActive)
                timer.close()
                timer.close()
                timer.stop()
                #expect(throws: LoopError(.handleClosed, operation: "UVTimer.start")) {
                    try timer.start(after: .zero)
                }
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(5))
            }
            #expect(fired.value == 0)
        }
    }

    @Test func rearmingReplacesTheDeadline() async throws {
        try await withStartedLoop { loop in
            let order = LoopConfined<[String]>([])
            let keep = Keep(loop)
            try await onLoop(loop) { done in
                let moved = keep(try loop.makeUVTimer { order.value.append("moved") })
                let fixed = keep(try loop.makeUVTimer { order.value.append("fixed") })
                try moved.start(after: .milliseconds(1))
                try fixed.start(after: .milliseconds(5))
                try moved.start(after: .milliseconds(20))  // re-armed past `fixed`
                try keep(try loop.makeUVTimer { done() }).start(after: .milliseconds(40))
            }
            #expect(order.value == ["fixed", "moved"])
        }
    }
}

@Suite("TestLoop timers in virtual time")
struct TestLoopTimerTests {
    @Test func timersFireInDeadlineOrderWithTiesInStartOrder() throws {
        let loop = TestLoop()
        let fired = LoopConfined<[(String, UInt64)]>([])
        func timer(_ name: String) throws -> any LoopTimer {
            try loop.makeTimer { fired.value.append((name, loop.now.nanoseconds / 1_000_000)) }
        }
        let a = try timer("a30"), b = try timer("b10"), c = try timer("c10"), d = try timer("d20")
        try a.start(after: .milliseconds(30))
        try b.start(after: .milliseconds(10))
        try c.start(after: .milliseconds(10))
        try d.start(after: .milliseconds(20))
        loop.advance(by: .milliseconds(15))
        #expect(fired.value.map(\.0) == ["b10", "c10"])
        #expect(fired.value.map(\.1) == [10, 10], "each fires at its own deadline")
        #expect(loop.now == LoopInstant(nanoseconds: 15_000_000))
        loop.advance(by: .milliseconds(100))
        #expect(fired.value.map(\.0) == ["b10", "c10", "d20", "a30"])
        #expect(fired.value.map(\.1) == [10, 10, 20, 30])
        #expect(loop.activeTimerCount == 0)
        for t in [a, b, c, d] { t.close() }
        #expect(loop.openTimerCount == 0)
    }

    @Test func rearmingMovesATimerBehindEqualDeadlines() throws {
        let loop = TestLoop()
        let fired = LoopConfined<[String]>([])
        let first = try loop.makeTimer { fired.value.append("first") }
        let second = try loop.makeTimer { fired.value.append("second") }
        try first.start(after: .milliseconds(10))
        try second.start(after: .milliseconds(10))
        try first.start(after: .milliseconds(10))  // re-armed: now started after `second`
        loop.advance(by: .milliseconds(10))
        #expect(fired.value == ["second", "first"])
    }

    @Test func edgeCasesMatchLibuv() throws {
        let loop = TestLoop()
        let fired = LoopConfined<[String]>([])
        let zero = try loop.makeTimer { fired.value.append("zero") }
        try zero.start(after: .zero)
        #expect(fired.value.isEmpty)
        loop.run()
        #expect(fired.value == ["zero"])

        let huge = try loop.makeTimer { fired.value.append("huge") }
        try huge.start(after: .seconds(Int64.max))
        loop.advance(by: .seconds(1_000_000))
        #expect(huge.isActive)

        let stopped = try loop.makeTimer { fired.value.append("stopped") }
        try stopped.start(after: .milliseconds(1))
        stopped.stop()
        stopped.stop()
        loop.advance(by: .milliseconds(5))

        let box = LoopConfined<(any LoopTimer)?>(nil)
        let rearming = try loop.makeTimer {
            fired.value.append("rearm")
            if fired.value.filter({ $0 == "rearm" }).count < 3 { try! box.value!.start(after: .milliseconds(1)) }
        }
        box.value = rearming
        try rearming.start(after: .zero)
        loop.advance(by: .milliseconds(10))
        #expect(fired.value == ["zero", "rearm", "rearm", "rearm"])
        box.value = nil
        loop.shutdown()
        #expect(loop.openTimerCount == 0)
        #expect(throws: LoopError(.shutDown, operation: "TestTimer.start")) { try huge.start(after: .zero) }
    }
}
