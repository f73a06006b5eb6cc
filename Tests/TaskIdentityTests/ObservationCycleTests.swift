import Observation
import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

#if canImport(Glibc)
    import Glibc
#endif

// Chains of observed runs that restart each other: stopped at the limit, with the chain in order.
extension ObservationTests {
    /// A → A: each run writes the state its own identity reads, forever. The chain is stopped
    /// past the limit, with the error naming every run of it.
    @Test func selfCycleIsStoppedAtTheDefaultLimit() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        #expect(registry.maxObservationDepth == 100)
        let counter = LoopBound(Counter(), loop: loop)
        let bystander = LoopBound(Counter(), loop: loop)
        let bystanderRuns = Confined(0)
        try registry.task("B", tracking: { bystander.value.value }) { _, _ in bystanderRuns.value += 1 }
        try registry.task("A", tracking: { counter.value.value }) { value, context in
            context.commit { counter.value.value = value + 1 }
        }
        loop.run()
        guard let error = try cycleError(of: "A", in: registry) else { return }
        // Runs at depths 0...100 ran (101 of them); the 102nd generation was stopped.
        #expect(counter.value.value == 101)
        #expect(error.limit == 100)
        #expect(error.chain.count == 102)
        #expect(error.chain.allSatisfy { $0.key as? String == "A" && $0.name == .main })
        #expect(error.chain.map(\.generation) == Array(1...102))
        #expect(error.cycle.map { $0.key as? String } == ["A"])
        #expect(error.description.contains("\"A\"/main → \"A\"/main"))
        #expect(try registry.counters.observationCyclesStopped == 1)
        #expect(try registry.counters.started == 1 + 101 + 1, "B's run, A's runs, and the stopped generation")
        #expect(try registry.counters.failed == 1)
        // The registry and every other slot go on working.
        bystander.value.value = 1
        loop.run()
        #expect(bystanderRuns.value == 2)
        // A's tracking ended with the chain: a later write does nothing, and declaring it again
        // starts it again (and its cycle is stopped again).
        let evaluationsAfterStop = evaluations(registry)
        counter.value.value = 1_000
        loop.run()
        #expect(evaluations(registry) == evaluationsAfterStop)
        try registry.task("A", tracking: { counter.value.value }) { value, context in
            context.commit { counter.value.value = value + 1 }
        }
        loop.run()
        #expect(try registry.counters.observationCyclesStopped == 2)
        h.finish()
    }

    /// A → B → A across slots, with a configured limit: each task writes what the other reads,
    /// once a write from outside has started the chain.
    @Test func crossSlotCycleIsStoppedWithTheChainInOrder() throws {
        let loop = TestLoop()
        let registry = try TaskRegistry<String>(loop: loop, configuration: .observationDepth(5))
        let ping = LoopBound(Counter(), loop: loop)
        let pong = LoopBound(Counter(), loop: loop)
        try registry.task("A", tracking: { ping.value.value }) { value, context in
            if value > 0 { context.commit { pong.value.value = value + 1 } }
        }
        try registry.task("B", tracking: { pong.value.value }) { value, context in
            if value > 0 { context.commit { ping.value.value = value + 1 } }
        }
        loop.run()
        #expect(try registry.counters.started == 2)
        ping.value.value = 1  // from outside: the root of the chain
        loop.run()
        guard let error = try cycleError(of: "A", in: registry) else { return }
        // Depths 0...5 ran, alternating; A's next generation, at depth 6, was stopped.
        #expect(error.chain.map { $0.key as? String } == ["A", "B", "A", "B", "A", "B", "A"])
        #expect(error.chain.map(\.generation) == [2, 2, 3, 3, 4, 4, 5])
        #expect(error.cycle.map { $0.key as? String } == ["A", "B"])
        #expect(error.limit == 5)
        #expect(try registry.phase(of: "B")?.description == "finished", "B's last run finished; only A is stopped")
        #expect(try registry.counters.observationCyclesStopped == 1)
        registry.startShutdown()
        loop.run()
        #expect(try registry.counters.runningActions == 0)
        loop.shutdown()
    }

    /// A task that writes once and then sees an equal value converges: never flagged.
    @Test func convergingWriteOnceTaskIsNotFlagged() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let counter = LoopBound(Counter(), loop: loop)
        counter.value.value = 7
        // Normalizes the value to an even one: one write, after which the identity is stable.
        try registry.task(1, tracking: { counter.value.value }) { value, context in
            log.add("run \(value)")
            if value % 2 == 1 { context.commit { counter.value.value = value + 1 } }
        }
        loop.run()
        #expect(log.take() == ["run 7", "run 8"])
        // A write from outside that needs no normalizing: one evaluation, one run, no write.
        counter.value.value = 10
        loop.run()
        #expect(log.take() == ["run 10"])
        #expect(evaluations(registry) == 3)
        #expect(try registry.counters.observationCyclesStopped == 0)
        #expect(try registry.phase(of: 1)?.description == "finished")
        h.finish()
    }

    /// With a limit of 2, a chain of exactly 2 caused runs passes and 3 is stopped.
    @Test func theLimitIsExact() throws {
        for (writes, stopped) in [(2, false), (3, true)] {
            let loop = TestLoop()
            let registry = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(2))
            let counter = LoopBound(Counter(), loop: loop)
            try registry.task(1, tracking: { counter.value.value }) { value, context in
                if value < writes { context.commit { counter.value.value = value + 1 } }
            }
            loop.run()
            #expect(try registry.counters.observationCyclesStopped == (stopped ? 1 : 0), "\(writes) writes")
            var failedWithCycle = false
            if case .failed(_ as ObservationCycleError)? = try registry.phase(of: 1) { failedWithCycle = true }
            #expect(failedWithCycle == stopped, "\(writes) writes: \(String(describing: try! registry.phase(of: 1)))")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }
    }

    /// A run's own writes belong to its chain wherever in the run they happen: in the action
    /// itself, in a child task (`async let`), in an unstructured task it creates, and through
    /// either template or closure. (The run's task inherits the link from its creation.) Lost,
    /// each write would start a new chain at depth 0 and run on to the action's own cap of 50.
    @Test(arguments: ["action", "child task", "unstructured task", "template", "synchronous action's task"])
    func aRunsWritesBelongToItsChainWhereverTheyHappen(writer: String) throws {
        let loop = TestLoop()
        let registry = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(4))
        let counter = LoopBound(Counter(), loop: loop)
        @Sendable func write(_ value: Int) { if value < 50 { counter.value.value = value + 1 } }
        switch writer {
        case "action":
            try registry.task(1, tracking: { counter.value.value }) { value, _ in write(value) }
        case "child task":
            try registry.task(1, tracking: { counter.value.value }) { value, _ in
                async let written: Void = write(value)
                await written
            }
        case "unstructured task":
            try registry.task(1, tracking: { counter.value.value }) { value, _ in
                await Task(executorPreference: loop) { write(value) }.value
            }
        case "template":
            let template = try TaskTemplate<Int> { _, context in write(context.id(as: Int.self)!) }
            try registry.task(1, tracking: { counter.value.value }, template: template)
        default:
            // A synchronous action runs on the loop outside any task; a task it creates inherits
            // the run's link all the same.
            let template = try TaskTemplate<Int>.synchronous { _, context in
                let value = context.id(as: Int.self)!
                Task(executorPreference: loop) { write(value) }
            }
            try registry.task(1, tracking: { counter.value.value }, template: template)
        }
        loop.run()
        #expect(try registry.counters.observationCyclesStopped == 1, "\(writer)")
        #expect(counter.value.value == 5, "\(writer): depths 0...4 wrote, the sixth generation was stopped")
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    /// An identity closure's write belongs to its evaluation's run even when another registry
    /// tracks what it wrote (the cause is the thread's, not the registry's): R1's closure
    /// writes `b`, R2 tracks `b` and commits to `a`, which R1 tracks, so the chain crosses
    /// registries at every step and is stopped. Lost, each of R1's writes would start a chain
    /// at depth 0 and run on to the cap of 50.
    @Test func anIdentityClosuresWriteIsItsRunsInAnyRegistry() throws {
        let loop = TestLoop()
        let first = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(6))
        let second = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(6))
        let a = LoopBound(Counter(), loop: loop)
        let b = LoopBound(Counter(), loop: loop)
        try first.task(
            1,
            tracking: { () -> Int in
                let value = a.value.value
                if value > 0 && value < 50 && b.value.value != value { b.value.value = value }
                return value
            }
        ) { _, _ in }
        try second.task(1, tracking: { b.value.value }) { value, context in
            if value > 0 { context.commit { a.value.value = value + 1 } }
        }
        a.value.value = 1  // from outside: depth 0
        loop.run()
        let stopped = try first.counters.observationCyclesStopped + second.counters.observationCyclesStopped
        #expect(stopped == 1)
        #expect(a.value.value < 10, "the chain was stopped near the limit, not at the cap (a = \(a.value.value))")
        for registry in [first, second] { registry.startShutdown() }
        loop.run()
        loop.shutdown()
    }

    /// An identity closure that writes what it reads would re-evaluate itself every turn: its
    /// writes count as the chain's, and it is stopped like any cycle.
    @Test func identityClosureThatWritesWhatItReadsIsStopped() throws {
        let loop = TestLoop()
        let registry = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(3))
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task(
            1,
            tracking: { () -> Int in
                counter.value.value += 1
                return counter.value.value
            }
        ) { _, _ in }
        for _ in 0..<20 { loop.run() }
        #expect(try registry.counters.observationCyclesStopped == 1)
        #expect(try registry.counters.identityEvaluations < 20, "the chain stopped; nothing loops turn after turn")
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    /// A's action declares B anew on every run, and B writes what A reads: the declaration is
    /// a step of A's chain, so the cycle is stopped.
    @Test func declaringInsideARunContinuesItsChain() throws {
        let loop = TestLoop()
        let registry = try TaskRegistry<String>(loop: loop, configuration: .observationDepth(6))
        let ping = LoopBound(Counter(), loop: loop)
        let pong = LoopBound(Counter(), loop: loop)
        try registry.task("A", tracking: { ping.value.value }) { value, context in
            guard value > 0 else { return }
            context.commit {
                pong.value.value = value
                try? registry.task("B", tracking: { pong.value.value }) { value, context in
                    context.commit { ping.value.value = value + 1 }
                }
            }
        }
        loop.run()
        ping.value.value = 1
        for _ in 0..<50 { loop.run() }
        #expect(try registry.counters.observationCyclesStopped == 1)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    /// A chain of different tasks longer than the limit, without a loop: stopped, with no
    /// `cycle`, and said so.
    @Test func aLongChainWithoutALoopIsStoppedAsAChain() throws {
        let loop = TestLoop()
        let registry = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(2))
        let stages = LoopBound((0..<5).map { _ in Counter() }, loop: loop)
        for stage in 0..<4 {
            try registry.task(stage, tracking: { stages.value[stage].value }) { value, context in
                if value > 0 { context.commit { stages.value[stage + 1].value = value } }
            }
        }
        loop.run()
        stages.value[0].value = 1
        loop.run()
        guard let error = try cycleError(of: 3, in: registry) else { return }
        #expect(error.chain.map { $0.key as? Int } == [0, 1, 2, 3])
        #expect(error.cycle.isEmpty)
        #expect(error.description.hasPrefix("observation chain stopped: 0/main → 1/main → 2/main → 3/main"))
        #expect(stages.value[4].value == 0, "the chain went no further")
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }
}
