import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

/// `limit:` and `RegistryConfiguration.concurrencyLimit`: runs past a limit wait in its queue,
/// in virtual time.
@Suite("Concurrency limits: a queue where replaced work never starts")
struct ConcurrencyLimitTests {
    /// An action that logs its start and end (loop milliseconds) and takes `ms` to finish.
    static func work(_ log: EventLog, _ loop: TestLoop, _ name: String, ms: Int = 10) -> TaskAction {
        { context in
            log.add("\(name) starts at \(loop.now.nanoseconds / 1_000_000)")
            try await context.clock.sleep(for: .milliseconds(ms))
            log.add("\(name) ends at \(loop.now.nanoseconds / 1_000_000)")
        }
    }

    static func waitReason<Key>(_ registry: TaskRegistry<Key>, _ key: Key) -> TaskSnapshot.WaitReason? {
        registry.record(key, .main).map(TaskSnapshot.init(record:))?.waitReason
    }

    @Test func runsPastTheLimitWaitAndStartInTheTurnAPlaceIsGivenBack() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 2)
        for key in ["a", "b", "c", "d"] {
            try registry.task(key, id: 1, limit: limit, action: Self.work(log, loop, key, ms: key == "a" ? 10 : 20))
        }
        loop.run()
        #expect(log.take() == ["a starts at 0", "b starts at 0"])
        #expect(Self.waitReason(registry, "c") == .concurrencyLimit)
        #expect(try registry.phase(of: "c")?.description == "waiting")
        var counters = try registry.counters
        #expect(counters.queued == 2 && counters.queueLength == 2 && counters.runningActions == 2)
        #expect(
            try registry.limitState(of: limit)
                == ConcurrencyLimitState(maxRunning: 2, running: 2, queued: 2, oldestWait: .zero))
        loop.advance(ms: 4)
        #expect(try registry.limitState(of: limit).oldestWait == .milliseconds(4))
        #expect(try registry.limitState(of: try ConcurrencyLimit(maxRunning: 3)).description == "running 0/3, queued 0")
        loop.advance(ms: 6)
        #expect(log.take() == ["a ends at 10", "c starts at 10"], "c, queued first, takes a's place at once")
        #expect(try registry.limitState(of: limit).description == "running 2/2, queued 1, oldest wait 0.01 seconds")
        #expect(Self.waitReason(registry, "d") == .concurrencyLimit)
        loop.advance(ms: 10)
        #expect(log.take() == ["b ends at 20", "d starts at 20"])
        counters = try registry.counters
        #expect(counters.queueLength == 0)
        #expect(counters.queueWaitNanoseconds == 30_000_000, "c waited 10 ms and d 20 ms")
        loop.advance(ms: 20)
        #expect(try registry.counters.finished == 4)
        h.finish()
    }

    @Test func aQueuedRunReplacedBeforeItStartsNeverCallsItsActionAndItsSlotJoinsAtTheBack() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        let phases = PhaseRecorder(registry, "b")
        try registry.task("a", id: 1, limit: limit, action: Self.work(log, loop, "a"))
        try registry.task("b", id: 1, limit: limit, action: Self.work(log, loop, "b1"))
        loop.run()
        try registry.task("c", id: 1, limit: limit, action: Self.work(log, loop, "c"))
        loop.advance(ms: 5)
        try registry.task("b", id: 2, limit: limit, action: Self.work(log, loop, "b2"))
        loop.run()
        #expect(Self.waitReason(registry, "b") == .concurrencyLimit)
        loop.advance(ms: 5)
        #expect(log.take() == ["a starts at 0", "a ends at 10", "c starts at 10"], "b's new identity joined after c")
        loop.advance(ms: 10)
        #expect(log.take() == ["c ends at 20", "b2 starts at 20"])
        #expect(
            phases.take() == [
                "g1 waiting", "g1 cancelled(supersededByPolicy)", "g2 waiting", "g2 running",
            ])
        let counters = try registry.counters
        #expect(counters.coalesced == 1 && counters.started == 3)
        #expect(counters.queueWaitNanoseconds == 10_000_000 + 15_000_000, "c waited from 0, b2 from 5")
        loop.advance(ms: 10)
        h.finish()
    }

    @Test func removeCancelAndDropPendingTakeASlotOutOfTheQueue() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        for key in ["a", "b", "c", "d", "e"] {
            try registry.task(key, id: 1, limit: limit, action: Self.work(log, loop, key))
        }
        loop.run()
        try registry.remove("b")
        try registry.cancel("c")
        try registry.dropPending("d")
        loop.run()
        #expect(try registry.phase(of: "c")?.description == "cancelled(cancelledByCaller)")
        #expect(try registry.phase(of: "d")?.description == "cancelled(pendingDropped)")
        #expect(try registry.counters.queueLength == 1)
        loop.advance(ms: 10)
        #expect(log.take() == ["a starts at 0", "a ends at 10", "e starts at 10"])
        loop.advance(ms: 10)
        h.finish()
    }

    @Test func theQueueIsOrderedByPriorityThenByArrival() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        try registry.task("first", id: 1, limit: limit, action: Self.work(log, loop, "first"))
        loop.run()
        try registry.task("low", id: 1, priority: .low, limit: limit, action: Self.work(log, loop, "low"))
        try registry.task("high1", id: 1, priority: .high, limit: limit, action: Self.work(log, loop, "high1"))
        try registry.task("medium", id: 1, priority: .medium, limit: limit, action: Self.work(log, loop, "medium"))
        try registry.task("high2", id: 1, priority: .high, limit: limit, action: Self.work(log, loop, "high2"))
        loop.advance(ms: 50)
        #expect(
            log.take().filter { $0.contains("starts") } == [
                "first starts at 0", "high1 starts at 10", "high2 starts at 20", "medium starts at 30",
                "low starts at 40",
            ])
        h.finish()
    }

    @Test func aCancelledRunHoldsItsPlaceUntilItsActionReturns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        func declare(_ id: Int) throws {
            try registry.task("a", id: id, limit: limit) { context in
                log.add("\(id) starts at \(loop.now.nanoseconds / 1_000_000)")
                do { try await context.clock.sleep(for: .seconds(10)) } catch {
                    // Winds down for 5 ms after its cancellation, still holding the backend (in
                    // a task of its own, which the run's cancellation does not reach).
                    if id == 1 {
                        await Task(executorPreference: loop) { try? await context.clock.sleep(for: .milliseconds(5)) }
                            .value
                    }
                    log.add("\(id) returns at \(loop.now.nanoseconds / 1_000_000)")
                }
            }
        }
        try declare(1)
        loop.advance(ms: 10)
        try declare(2)
        loop.run()
        #expect(Self.waitReason(registry, "a") == .concurrencyLimit)
        #expect(try registry.counters.runningActions == 1)
        loop.advance(ms: 4)
        #expect(log.take() == ["1 starts at 0"])
        loop.advance(ms: 1)
        #expect(log.take() == ["1 returns at 15", "2 starts at 15"])
        h.finish()
    }

    /// A queued slot whose new identity waits out a debounce leaves the queue, and joins it
    /// again, at the back, when its window closes.
    @Test func aQueuedSlotThatDebouncesAgainLeavesTheQueueUntilItsWindowCloses() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        let search = try TaskTemplate<String>(debounce: .milliseconds(3), limit: limit) { key, context in
            log.add("\(key)=\(context.id(as: Int.self)!) starts at \(loop.now.nanoseconds / 1_000_000)")
            try await context.clock.sleep(for: .milliseconds(10))
        }
        try registry.task("a", id: 1, template: search)
        loop.advance(ms: 3)  // a=1 runs from 3 to 13
        try registry.task("b", id: 1, template: search)
        try registry.task("c", id: 1, template: search)
        loop.advance(ms: 3)  // b, then c, queued at 6
        #expect(Self.waitReason(registry, "b") == .concurrencyLimit)
        #expect(try registry.limitState(of: limit).queued == 2)
        try registry.task("b", id: 2, template: search)  // debounces until 9
        loop.advance(ms: 1)
        #expect(Self.waitReason(registry, "b") == .debounce)
        #expect(try registry.limitState(of: limit).queued == 1, "b's node went with its generation")
        loop.advance(ms: 2)
        #expect(Self.waitReason(registry, "b") == .concurrencyLimit)
        loop.advance(ms: 20)
        #expect(log.take() == ["a=1 starts at 3", "c=1 starts at 13", "b=2 starts at 23"])
        #expect(try registry.counters.queueLength == 0)
        loop.advance(ms: 10)
        h.finish()
    }

    @Test func aKeyThatKeepsChangingDoesNotHoldTheHead() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        let work = try TaskTemplate<String>(limit: limit) { key, context in
            log.add("\(key)=\(context.id(as: Int.self)!) starts at \(loop.now.nanoseconds / 1_000_000)")
            try await context.clock.sleep(for: .milliseconds(10))
        }
        try registry.task("other", id: 1, template: work)
        try registry.task("busy", id: 0, template: work)
        try registry.task("patient", id: 1, template: work)
        // "busy" changes every millisecond: each new id cancels its run, or replaces its queued one.
        for id in 1...40 {
            loop.advance(ms: 1)
            try registry.task("busy", id: id, template: work)
        }
        loop.advance(ms: 30)
        let starts = log.take()
        #expect(
            starts.prefix(4) == [
                "other=1 starts at 0", "patient=1 starts at 10", "busy=19 starts at 20", "busy=20 starts at 20",
            ], "busy queued first, but each of its new ids joined at the back: patient went first")
        h.finish()
    }

    @Test func theRegistrysLimitCoversTasksWithoutOneOfTheirOwn() throws {
        let loop = TestLoop()
        var configuration = RegistryConfiguration()
        configuration.concurrencyLimit = try ConcurrencyLimit(maxRunning: 1)
        let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
        let log = EventLog()
        let own = try ConcurrencyLimit(maxRunning: 5)
        try registry.task("a", id: 1, action: Self.work(log, loop, "a"))
        try registry.task("b", id: 1, action: Self.work(log, loop, "b"))
        try registry.task("c", id: 1, limit: own, action: Self.work(log, loop, "c"))
        loop.advance(ms: 10)
        #expect(log.take() == ["a starts at 0", "c starts at 0", "a ends at 10", "c ends at 10", "b starts at 10"])
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    @Test func aDelayedSynchronousRunCancelledBeforeItsActionGivesItsPlaceBackAtOnce() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        let publish = try TaskTemplate<String>.synchronous(limit: limit, after: .milliseconds(10)) { key, _ in
            log.add("\(key) called at \(loop.now.nanoseconds / 1_000_000)")
        }
        try registry.task("a", id: 1, template: publish)
        try registry.task("b", id: 1, template: publish)
        loop.advance(ms: 4)
        #expect(Self.waitReason(registry, "b") == .concurrencyLimit)
        try registry.remove("a")
        loop.advance(ms: 10)
        #expect(log.take() == ["b called at 14"], "b started at 4, when a was removed")
        h.finish()
    }

    @Test func shutdownEndsQueuedRunsAndLeavesNothingBehind() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1)
        try registry.task("a", id: 1, limit: limit, action: Self.work(log, loop, "a"))
        try registry.task("b", id: 1, limit: limit, action: Self.work(log, loop, "b"))
        loop.run()
        let phases = PhaseRecorder(registry, "b")
        loop.run()
        registry.startShutdown()
        loop.run()
        #expect(phases.take() == ["g1 cancelled(registryShutDown)"])
        #expect(log.take() == ["a starts at 0"])
        #expect(try registry.counters.queueLength == 0)
        loop.shutdown()
    }

    @Test func aLimitOutsideItsRangeIsRefused() throws {
        #expect(throws: RegistryError.invalidConcurrencyLimit(0)) { try ConcurrencyLimit(maxRunning: 0) }
        #expect(throws: RegistryError.invalidConcurrencyLimit(-3)) { try ConcurrencyLimit(maxRunning: -3) }
        #expect(throws: RegistryError.invalidConcurrencyLimit(Int(UInt32.max) + 1)) {
            try ConcurrencyLimit(maxRunning: Int(UInt32.max) + 1)
        }
        #expect(try ConcurrencyLimit(maxRunning: ConcurrencyLimit.maxRunningLimit).maxRunning == Int(UInt32.max))
        #expect(RegistryError.invalidConcurrencyLimit(0).code == .invalidConcurrencyLimit)
    }

    @Test func eachLimitIsItsOwnQueueAndCopiesShareOne() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let first = try ConcurrencyLimit(maxRunning: 1)
        let copy = first
        let second = try ConcurrencyLimit(maxRunning: 1)
        #expect(first == copy && first != second)
        try registry.task("a", id: 1, limit: first, action: Self.work(log, loop, "a"))
        try registry.task("b", id: 1, limit: copy, action: Self.work(log, loop, "b"))
        try registry.task("c", id: 1, limit: second, action: Self.work(log, loop, "c"))
        loop.run()
        #expect(log.take() == ["a starts at 0", "c starts at 0"])
        loop.advance(ms: 20)
        h.finish()
    }

    /// Random declarations (two priorities, some debounced), cancellations, removals and
    /// time steps: after every step, no more than the limit run, every waiting slot is queued,
    /// and the queue's links hold (the check the records' unchecked rare state relies on).
    @Test func randomTrafficNeverPassesTheLimitAndLosesNoRun() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 3)
        // Actions executing now, and the most at once.
        let executing = Mutex((now: 0, most: 0))
        func template(debounce: Int, priority: TaskPriority) throws -> TaskTemplate<Int> {
            try TaskTemplate<Int>(priority: priority, debounce: .milliseconds(debounce), limit: limit) { key, context in
                executing.withLock { $0 = (now: $0.now + 1, most: max($0.most, $0.now + 1)) }
                defer { executing.withLock { $0.now -= 1 } }
                try? await context.clock.sleep(for: .milliseconds(1 + key % 7))
                context.commit { log.add("\(key)") }
            }
        }
        let templates = try [
            template(debounce: 0, priority: .medium), template(debounce: 0, priority: .high),
            template(debounce: 2, priority: .medium),
        ]
        var random = SplitMix64(state: 34)
        var nextID = 0
        for _ in 0..<4_000 {
            let key = random.below(16)
            switch random.below(12) {
            case 0..<7:
                nextID += 1
                try registry.task(key, id: nextID, template: templates[random.below(3)])
            case 7: try registry.remove(key)
            case 8: try registry.cancel(key)
            default: loop.advance(ms: random.below(4))
            }
            loop.run()
            if let queue = registry.core.limits.existingQueue(for: limit) {  // made by the first declaration
                #expect(queue.brokenInvariant() == nil)
                #expect(queue.running <= 3)
                #expect(queue.count == (try registry.counters.queueLength), "a node per waiting generation")
            }
            #expect(executing.withLock { $0.now } <= 3)
            let waiting = (0..<16).filter { Self.waitReason(registry, $0) == .concurrencyLimit }
            #expect(try registry.counters.queueLength == waiting.count)
            for key in waiting {
                let record = try #require(registry.record(key, .main))
                #expect(record.rare?.limitQueued != nil, "\(key) waits with no node")
            }
        }
        loop.advance(ms: 100)
        let counters = try registry.counters
        #expect(counters.queueLength == 0 && counters.runningActions == 0 && executing.withLock { $0.most } == 3)
        #expect(counters.liveGenerations == 0, "every generation ran or was cancelled")
        #expect(counters.queued > 100 && counters.started > 100)
        for key in 0..<16 {
            let rare = registry.record(key, .main)?.rare
            #expect(rare?.placesHeld.isEmpty ?? true && rare?.limitQueued == nil, "\(key) holds a place or a node")
        }
        h.finish()
        #expect(registry.core.limits.isEmpty)
    }
}
