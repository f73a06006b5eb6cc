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

    /// Random declarations (two delays, so records move between lists), removals and
    /// advances of virtual time against a model of when each window closes; the lists' links
    /// are walked after every step. A broken link would run a window twice, never, or late;
    /// the nodes are reused (the free list) and dropped whenever a list empties.
    @Test func randomChangesAcrossTwoDelaysCloseEachWindowOnceOnTime() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func work(_ milliseconds: Int) throws -> TaskTemplate<Int> {
            try .synchronous(debounce: .milliseconds(milliseconds)) { key, context in
                log.add("\(key):\(context.id(as: Int.self)!) at \(loop.now.nanoseconds / 1_000_000)")
            }
        }
        let delays = [5, 13]
        let templates = try delays.map(work)
        var pending: [Int: (id: Int, due: Int)] = [:]
        var random = SplitMix64(state: 33)
        var nextID = 0
        for _ in 0..<6_000 {
            let now = Int(loop.now.nanoseconds / 1_000_000)
            let key = random.below(12)
            switch random.below(10) {
            case 0..<6:
                nextID += 1
                let which = random.below(2)
                try registry.task(key, id: nextID, template: templates[which])
                pending[key] = (nextID, now + delays[which])
            case 6:
                try registry.remove(key)
                pending[key] = nil
            default:
                let step = random.below(8)
                loop.advance(ms: step)
                let closed = pending.filter { $0.value.due <= now + step }
                for key in closed.keys { pending[key] = nil }
                let expected = closed.map { "\($0.key):\($0.value.id) at \($0.value.due)" }
                #expect(log.take().sorted() == expected.sorted())
            }
            let lists = registry.core.optionsTable.debounceWindowsForTesting.map { $0.brokenInvariant() }
            #expect(lists.compactMap { $0 } == [])
        }
        loop.advance(ms: 13)
        #expect(log.take().count == pending.count)
        let linked = registry.core.optionsTable.debounceWindowsForTesting.map(\.count)
        #expect(linked == [0, 0])
        h.finish()
    }
}
