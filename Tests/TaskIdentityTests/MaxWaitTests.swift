import Testing
import UVLoop

@testable import TaskIdentity

/// `maxWait:`: a debounce window that keeps re-opening closes at most `maxWait` after it first
/// opened, and its run has the latest identity (lodash's `maxWait`, Inngest's debounce
/// `timeout`). On the test loop, in virtual time.
@Suite("Debounce with maxWait: a window that cannot starve")
struct MaxWaitTests {
    /// A key changing every 200 ms under a 250 ms debounce never runs without `maxWait`; with a
    /// 1 s `maxWait` it runs every second, each time with the identity declared last.
    @Test func aKeyChangingFasterThanItsDebounceRunsEveryMaxWaitWithItsLatestIdentity() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        var value = 0
        // 20 changes, one every 200 ms, for 4 s.
        for _ in 0..<20 {
            value += 1
            try registry.task("k", id: value, debounce: .milliseconds(250), maxWait: .seconds(1)) { context in
                log.add("run \(context.id(as: Int.self)!) at \(context.clock.now.nanoseconds / 1_000_000) ms")
            }
            try registry.task("starved", id: value, debounce: .milliseconds(250)) { _ in log.add("starved ran") }
            loop.advance(ms: 200)
        }
        // The windows opened at 0, then after each run: at 1,000 ms (change 6 arrives at 1,000),
        // 2,000 and 3,000. Each run has the identity declared just before its bound.
        #expect(log.take() == ["run 5 at 1000 ms", "run 10 at 2000 ms", "run 15 at 3000 ms", "run 20 at 4000 ms"])
        // Once the changes stop, the last window closes by its debounce.
        loop.advance(ms: 250)
        #expect(log.take() == ["starved ran"])
        h.finish()
    }

    /// A window that closes by its debounce leaves its bound without effect: the next window
    /// gets a bound of its own, counted from its own opening.
    @Test func eachWindowIsBoundFromItsOwnOpening() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ id: Int) throws {
            try registry.task("k", id: id, debounce: .milliseconds(100), maxWait: .milliseconds(300)) { context in
                log.add("run \(context.id(as: Int.self)!) at \(context.clock.now.nanoseconds / 1_000_000) ms")
            }
        }
        try declare(1)
        loop.advance(ms: 150)  // closes by its debounce at 100 ms
        #expect(log.take() == ["run 1 at 100 ms"])
        try declare(2)  // a new window at 150 ms: bound at 450 ms, not the first window's 300 ms
        loop.advance(ms: 90)
        try declare(3)  // 240 ms
        loop.advance(ms: 90)
        try declare(4)  // 330 ms: past the first window's bound, which must not close this one
        loop.advance(ms: 90)
        try declare(5)  // 420 ms
        loop.advance(ms: 29)
        #expect(log.take().isEmpty)
        loop.advance(ms: 1)  // 450 ms
        #expect(log.take() == ["run 5 at 450 ms"])
        h.finish()
    }

    /// A window that nothing re-opens closes by its debounce, before its bound; a `maxWait`
    /// shorter than the debounce closes every window at `maxWait`.
    @Test func theBoundOnlyEverShortensAWindow() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1, debounce: .milliseconds(100), maxWait: .seconds(5)) { _ in log.add("a") }
        try registry.task("b", id: 1, debounce: .milliseconds(500), maxWait: .milliseconds(200)) { _ in log.add("b") }
        loop.advance(ms: 100)
        #expect(log.take() == ["a"])
        loop.advance(ms: 100)
        #expect(log.take() == ["b"])
        loop.advance(ms: 10_000)
        #expect(log.take().isEmpty)
        #expect(try registry.counters.started == 2)
        h.finish()
    }

    /// Removed, or run at once (`runNow`), a window's bound later finds nothing to close.
    @Test func aBoundOutlivedByItsWindowDoesNothing() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("gone", id: 1, debounce: .milliseconds(100), maxWait: .milliseconds(150)) { _ in
            log.add("gone ran")
        }
        try registry.task("now", id: 1, debounce: .milliseconds(100), maxWait: .milliseconds(150)) { _ in
            log.add("now ran")
        }
        loop.advance(ms: 50)
        try registry.remove("gone")
        try registry.runNow("now")
        loop.run()
        #expect(log.take() == ["now ran"])
        loop.advance(ms: 500)
        #expect(log.take().isEmpty)
        #expect(try registry.counters.started == 1)
        h.finish()
    }

    @Test func aMaxWaitUnderANanosecondIsRefused() throws {
        let h = RegistryHarness<String>()
        #expect(throws: RegistryError.invalidDuration(name: "maxWait", .zero)) {
            try h.registry.task("k", id: 1, debounce: .milliseconds(10), maxWait: .zero) { _ in }
        }
        #expect(
            RegistryError.invalidDuration(name: "maxWait", .zero).description
                == "maxWait must be at least 1 nanosecond (got 0.0 seconds)")
        h.finish()
    }

    /// Templates, sharded registries and observed tasks take `maxWait` too.
    @Test func aTemplateBoundsItsWindows() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let template = try TaskTemplate<String>(debounce: .milliseconds(250), maxWait: .milliseconds(600)) {
            key, context in log.add("\(key) \(context.id(as: Int.self)!)")
        }
        for id in 1...5 {
            try registry.task("t", id: id, template: template)
            loop.advance(ms: 200)
        }
        #expect(log.take() == ["t 3"])  // bound at 600 ms: ids 1, 2, 3 declared by then
        h.finish()
    }

    /// Options that change between declarations: a window opened without `maxWait` is bound
    /// from the first declaration that has it, and a bound set under earlier options never
    /// closes a later window.
    @Test func aBoundFollowsTheOptionsOfTheDeclarations() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ key: String, _ id: Int, maxWait: Duration?) throws {
            try registry.task(key, id: id, debounce: .milliseconds(100), maxWait: maxWait) { context in
                log.add("\(key) \(context.id(as: Int.self)!) at \(context.clock.now.nanoseconds / 1_000_000) ms")
            }
        }
        // "late": opened without a bound at 0; bound from 80 ms, so it closes at 380 ms.
        try declare("late", 1, maxWait: nil)
        for id in 2...5 {
            loop.advance(ms: 80)
            try declare("late", id, maxWait: .milliseconds(300))
        }
        loop.advance(ms: 60)  // 380 ms
        #expect(log.take() == ["late 5 at 380 ms"])
        // "old": its first window, bound at 300 ms, closes by its debounce at 100 ms; the second,
        // opened at 250 ms without a bound, closes by its own debounce at 350 ms, not at 300 ms.
        try declare("old", 1, maxWait: .milliseconds(300))
        loop.advance(ms: 250)
        try declare("old", 2, maxWait: nil)
        loop.advance(ms: 50)
        #expect(log.take() == ["old 1 at 480 ms"])
        loop.advance(ms: 100)
        #expect(log.take() == ["old 2 at 730 ms"])
        h.finish()
    }
}
