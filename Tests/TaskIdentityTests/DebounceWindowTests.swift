import Testing
import UVLoop

@testable import TaskIdentity

@Suite("Debounce windows: fired once, at the latest deadline, leaving no entry behind")
struct DebounceWindowTests {
    @Test func changesInsideTheWindowFireOnceAtTheLastDeadline() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous(debounce: .milliseconds(10)) { _, context in
            log.add("\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
        }
        for id in 1...50 {
            try registry.task("a", id: id, template: work)
            loop.advance(ms: 1)
        }
        // The last change came at 49 ms: the window closes at 59 ms, not before.
        loop.advance(ms: 8)
        #expect(log.take() == [])
        loop.advance(ms: 1)
        #expect(log.take() == ["50 at 59"])
        #expect(try registry.counters.coalesced == 49 && registry.counters.finished == 1)
        h.finish()
    }

    @Test func aShorterDelayFiresOnItsOwnDeadline() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func work(_ milliseconds: Int) throws -> TaskTemplate<String> {
            try .synchronous(debounce: .milliseconds(milliseconds)) { _, context in
                log.add("\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
            }
        }
        let slow = try work(100)
        let fast = try work(5)
        try registry.task("a", id: 1, template: slow)
        loop.advance(ms: 10)
        try registry.task("a", id: 2, template: fast)  // due at 15 ms, long before 100 ms
        loop.advance(ms: 5)
        #expect(log.take() == ["2 at 15"])
        loop.advance(ms: 100)  // the slow window's entry comes due and finds nothing to do
        #expect(log.take() == [])
        h.finish()
    }

    @Test func aWindowReopenedAfterItsRunKeepsItsTiming() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous(debounce: .milliseconds(10)) { _, context in
            log.add("\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
        }
        try registry.task("a", id: 1, template: work)
        loop.advance(ms: 10)
        #expect(log.take() == ["1 at 10"])
        for id in 2...4 {
            try registry.task("a", id: id, template: work)
            loop.advance(ms: 4)
        }
        // The last change came at 18 ms.
        loop.advance(ms: 5)
        #expect(log.take() == [])
        loop.advance(ms: 1)
        #expect(log.take() == ["4 at 28"])
        try registry.remove("a")
        try registry.task("a", id: 5, template: work)
        try registry.remove("a")  // removed inside its window: its entry comes due and is dropped
        loop.advance(ms: 20)
        #expect(log.take() == [])
        h.finish()
    }
}
