import Observation
import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Observed identities")
struct ObservationTests {
    /// The bug that started the field, fixed: both dependencies are tracked, with nothing to
    /// list by hand, and a property the closure did not read restarts nothing.
    @Test func imageLoaderRestartsWhenEitherDependencyChanges() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let model = LoopBound(ImageModel(), loop: loop)
        let phases = PhaseRecorder(registry, "avatar")
        try registry.task("avatar", tracking: { model.value.baseURL + model.value.path }) { url, context in
            log.add("load \(url) g\(context.generation)")
            try await context.clock.sleep(for: .milliseconds(100))
            context.commit { model.value.image = url }
        }
        loop.advance(ms: 50)
        model.value.path = "/banner.png"  // mid-download
        loop.advance(ms: 200)
        #expect(model.value.image == "https://a.example/banner.png")
        model.value.baseURL = "https://b.example"
        loop.advance(ms: 200)
        #expect(model.value.image == "https://b.example/banner.png")
        let before = evaluations(registry)
        model.value.title = "Someone else"  // not read by the closure
        loop.advance(ms: 200)
        #expect(evaluations(registry) == before, "a property the closure did not read is not tracked")
        #expect(
            log.take() == [
                "load https://a.example/avatar.png g1", "load https://a.example/banner.png g2",
                "load https://b.example/banner.png g3",
            ])
        #expect(
            phases.take() == [
                "g1 running", "g1 cancelled(identityChanged)", "g2 running", "g2 finished", "g3 running",
                "g3 finished",
            ])
        #expect(try registry.counters.started == 3)
        h.finish()
    }

    /// The action receives the identity typed, and every option of `task(_:id:)` applies:
    /// here a debounce, whose window each change re-arms.
    @Test func typedIdentityAndDebounceApply() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task(1, tracking: { counter.value.value }, debounce: .milliseconds(100)) { value, context in
            let typed: Int = value
            log.add("run \(typed) g\(context.generation) id \(context.id(as: Int.self)!)")
        }
        loop.advance(ms: 50)
        counter.value.value = 1
        loop.advance(ms: 50)
        counter.value.value = 2
        loop.advance(ms: 99)
        #expect(log.take() == [], "each change re-armed the debounce")
        loop.advance(ms: 1)
        #expect(log.take() == ["run 2 g3 id 2"])
        #expect(try registry.counters.coalesced == 2)
        h.finish()
    }

    /// 1,000 writes in one turn: one evaluation and one restart.
    @Test func writesInOneTurnCoalesceIntoOneEvaluation() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task(1, tracking: { counter.value.value }) { value, _ in log.add("run \(value)") }
        loop.run()
        #expect(log.take() == ["run 0"])
        #expect(evaluations(registry) == 1)
        for value in 1...1_000 { counter.value.value = value }
        loop.run()
        #expect(evaluations(registry) == 2, "one evaluation for the whole burst")
        #expect(log.take() == ["run 1000"])
        #expect(try registry.counters.started == 2)
        h.finish()
    }

    /// Reason 3: what the action reads and writes is not tracked, and neither is an
    /// `@ObservationIgnored` property read by the closure.
    @Test func cachesAndIgnoredPropertiesRestartNothing() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let model = LoopBound(ImageModel(), loop: loop)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task("avatar", tracking: { "\(model.value.url)@\(model.value.imageScale)x" }) { url, context in
            // The action reads and writes a cache of its own: the model's `image`, and a counter.
            context.commit {
                log.add("load \(url) cached \(model.value.image ?? "none")")
                model.value.image = url
                counter.value.value += 1
            }
        }
        loop.run()
        #expect(log.take() == ["load https://a.example/avatar.png@1x cached none"])
        model.value.image = "evicted"  // the action's cache, written from outside
        counter.value.value = 42
        model.value.imageScale = 2  // @ObservationIgnored: read by the closure, not tracked
        loop.run()
        #expect(log.take() == [])
        #expect(try registry.counters.started == 1)
        #expect(evaluations(registry) == 1)
        model.value.path = "/banner.png"  // a tracked property: the ignored one is read anew
        loop.run()
        #expect(log.take() == ["load https://a.example/banner.png@2x cached evicted"])
        h.finish()
    }

    /// Reason 2: a task declared without an identity runs once per slot lifetime, whatever
    /// observable state its action reads; a continuous loop over a sequence is the example.
    @Test func runOnceTaskIsNotRestartedByStateItReads() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let counter = LoopBound(Counter(), loop: loop)
        let (ticks, ticker) = AsyncStream.makeStream(of: Int.self)
        try registry.task("feed") { context in
            log.add("subscribe")
            for await tick in ticks {
                context.commit { log.add("tick \(tick) sees \(counter.value.value)") }
            }
        }
        loop.run()
        ticker.yield(1)
        loop.run()
        counter.value.value = 5
        loop.run()
        ticker.yield(2)
        loop.run()
        #expect(log.take() == ["subscribe", "tick 1 sees 0", "tick 2 sees 5"])
        #expect(try registry.counters.started == 1)
        #expect(evaluations(registry) == 0)
        ticker.finish()
        h.finish()
    }

    /// Removing the slot ends the tracking: a later write evaluates nothing, and the closure
    /// (with what it captured) is freed.
    @Test func removalEndsTrackingAndFreesTheClosure() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry) = (h.loop, h.registry)
        let counter = LoopBound(Counter(), loop: loop)
        weak var weakWitness: Witness?
        do {
            let witness = Witness()
            weakWitness = witness
            try registry.task(
                1,
                tracking: {
                    _ = witness; return counter.value.value
                }
            ) { _, _ in }
        }
        loop.run()
        #expect(weakWitness != nil)
        try registry.remove(1)
        loop.run()
        #expect(weakWitness == nil, "the tracking's closure is freed with the slot")
        counter.value.value = 1
        loop.run()
        #expect(evaluations(registry) == 1)
        #expect(try registry.contains(1) == false, "a late write does not bring the slot back")
        h.finish()
    }

    /// Shutdown and releasing the registry end the tracking too.
    @Test func shutdownAndReleaseEndTracking() throws {
        let loop = TestLoop()
        let counter = LoopBound(Counter(), loop: loop)
        weak var weakWitness: Witness?
        weak var weakRegistry: TaskRegistry<Int>?
        do {
            let registry = TaskRegistry<Int>(loop: loop)
            weakRegistry = registry
            let witness = Witness()
            weakWitness = witness
            try registry.task(
                1,
                tracking: {
                    _ = witness; return counter.value.value
                }
            ) { _, _ in }
            loop.run()
            registry.startShutdown()
            loop.run()
            counter.value.value = 1
            loop.run()
            #expect(try registry.counters.identityEvaluations == 1)
            #expect(throws: RegistryError.shutDown) { try registry.task(2, tracking: { 0 }) { _, _ in } }
        }
        #expect(weakWitness == nil)
        #expect(weakRegistry == nil)
        // Released without shutdown, with a write pending.
        do {
            let registry = TaskRegistry<Int>(loop: loop)
            let witness = Witness()
            weakWitness = witness
            try registry.task(
                1,
                tracking: {
                    _ = witness; return counter.value.value
                }
            ) { _, _ in }
            loop.run()
            counter.value.value = 2  // posted; evaluated after the registry is gone
        }
        loop.run()
        #expect(weakWitness == nil, "nothing of the tracking outlives the registry")
        counter.value.value = 3
        loop.run()
        #expect(loop.queuedWorkCount == 0)
        loop.shutdown()
    }

    /// Declaring with an explicit id replaces the tracking; declaring with `tracking:` again
    /// replaces the closure and evaluates it at once.
    @Test func redeclaringReplacesTheTracking() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task(1, tracking: { counter.value.value }) { value, _ in log.add("value \(value)") }
        loop.run()
        try registry.task(1, tracking: { counter.value.other }) { value, _ in log.add("other \(value)") }
        loop.run()
        #expect(log.take() == ["value 0"], "the new closure's value is equal: nothing restarts")
        counter.value.value = 1  // no longer read
        counter.value.other = 2
        loop.run()
        #expect(log.take() == ["other 2"])
        try registry.task(1, id: "explicit") { _ in log.add("explicit") }
        loop.run()
        counter.value.other = 3
        loop.run()
        #expect(log.take() == ["explicit"])
        #expect(evaluations(registry) == 3)
        h.finish()
    }

    /// A template declared with `tracking:`, synchronous here: its action reads the identity
    /// from the context, and its writes are its run's (a self-cycle is stopped).
    @Test func templatesTakeObservedIdentities() throws {
        let loop = TestLoop()
        let registry = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(3))
        let counter = LoopBound(Counter(), loop: loop)
        let seen = Confined([Int]())
        let template = try TaskTemplate<Int>.synchronous { _, context in
            let value = context.id(as: Int.self)!
            seen.value.append(value)
            context.commit { counter.value.value = value + 1 }
        }
        try registry.task(1, tracking: { counter.value.value }, template: template)
        loop.run()
        #expect(seen.value == [0, 1, 2, 3])
        #expect(try registry.counters.observationCyclesStopped == 1)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    /// Actions on the global executor that commit through `postCommit` (its body runs on the
    /// loop outside the run's task) or `commitOnLoop` (it hops to the loop): their writes still
    /// count as the run's, and the self-cycle is stopped.
    @Test(arguments: [false, true])
    func offLoopCommitsBelongToTheirRun(hopping: Bool) async throws {
        let loop = UVLoop(name: "observed-off-loop-commit")
        try loop.start()
        let registry = try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(4))
        let counter = try await loop.submit { LoopBound(Counter(), loop: loop) }
        try await loop.submit {
            try registry.task(1, tracking: { counter.value.value }, executor: .global) { value, context in
                if hopping {
                    await context.commitOnLoop { counter.value.value = value + 1 }
                } else {
                    context.postCommit { counter.value.value = value + 1 }
                }
            }
        }
        // A lost cause would restart the task forever: bounded, so that it fails instead.
        var stopped: UInt64 = 0
        for _ in 0..<200_000 where stopped == 0 {
            stopped = try await registry.countersSnapshot().observationCyclesStopped
            await Task.yield()
        }
        #expect(stopped == 1)
        let final = try await loop.submit { counter.value.value }
        #expect(final == 5, "depths 0...4 wrote, the sixth generation was stopped")
        await registry.shutdown()
        try loop.syncShutdown()
    }

    #if ObservationSPI
        // Only with the `didSet` mechanism: with `willSetAndHop` (the default, without the
        // `ObservationSPI` trait) a write from another thread may be read before its store, and then missed
        // until the next (`ObservationMechanismTests` pins that difference deterministically).
        /// Writes from 4 threads at once, on a real loop: every slot ends with the identity of its
        /// model's last write (Observation reports a write after it is stored, so the evaluation it
        /// posts reads the new value).
        @Test func writesFromFourThreadsEndAtTheLastValues() async throws {
            let loop = UVLoop(name: "observed-threads")
            try loop.start()
            let registry = TaskRegistry<Int>(loop: loop)
            let models = (0..<40).map { _ in SharedCounter() }
            let committed = try await loop.submit { LoopBound([Int: Int](), loop: loop) }
            try await loop.submit {
                for (slot, model) in models.enumerated() {
                    try registry.task(slot, tracking: { model.value }) { value, context in
                        context.commit { committed.value[slot] = value }
                    }
                }
            }
            let writers = (0..<4).map { thread in
                PlainThread {
                    for write in 1...20_000 { models[thread * 10 + write % 10].value = write }
                }
            }
            for writer in writers { writer.join() }
            var expected: [Int: Int] = [:]
            for thread in 0..<4 {
                for slot in 0..<10 { expected[thread * 10 + slot] = (1...20_000).last { $0 % 10 == slot }! }
            }
            // Posted evaluations and their runs finish in a few loop turns; a lost write never does.
            var finals: [Int: Int] = [:]
            for _ in 0..<100_000 {
                finals = try await loop.submit { committed.value }
                if finals == expected { break }
                await Task.yield()
            }
            #expect(finals == expected)
            let counters = try await registry.countersSnapshot()
            #expect(counters.identityEvaluations < 40 + 80_000, "writes coalesced: \(counters)")
            await registry.shutdown()
            try loop.syncShutdown()
            #expect(loop.liveHandleCount == 0)
        }
    #endif

    /// A write between the tracked read and the read after it may change which properties
    /// the identity depends on (`useA ? a : b`): the tracker evaluates again, tracked, so that
    /// the properties the value now depends on are the ones tracked. Simulated here with a
    /// closure whose first call reads `value` and whose later calls read `other`.
    @Test func dependenciesThatChangeBetweenTheTwoReadsAreTrackedAgain() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let counter = LoopBound(Counter(), loop: loop)
        let calls = Confined(0)
        counter.value.other = 7
        try registry.task(
            1,
            tracking: { () -> Int in
                calls.value += 1
                return calls.value == 1 ? counter.value.value : counter.value.other
            }
        ) { value, _ in log.add("run \(value)") }
        loop.run()
        #expect(log.take() == ["run 7"])
        #expect(evaluations(registry) == 2, "evaluated again, tracked, after the two reads disagreed")
        counter.value.other = 8  // tracked only thanks to the second evaluation
        loop.run()
        #expect(log.take() == ["run 8"])
        h.finish()
    }

    /// A subscription that tracking left behind in a model's registrar goes with that
    /// property's next write, and never evaluates anything.
    @Test func aLeftoverSubscriptionGoesWithTheNextWrite() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry) = (h.loop, h.registry)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task(1, tracking: { counter.value.value }) { _, _ in }
        loop.run()
        weak let subscription = registry.observations.values.first?.subscription
        try registry.remove(1)
        loop.run()
        #expect(subscription != nil, "still in the model's registrar: Observation cannot withdraw it")
        counter.value.value = 1
        loop.run()
        #expect(subscription == nil)
        #expect(evaluations(registry) == 1)
        h.finish()
    }

    /// An identity closure that removes its own slot ends its tracking; nothing is declared.
    @Test func anIdentityClosureThatRemovesItsSlotEndsItsTracking() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry) = (h.loop, h.registry)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task(
            1,
            tracking: { () -> Int in
                if counter.value.value > 0 { try? registry.remove(1) }
                return counter.value.value
            }
        ) { _, _ in }
        loop.run()
        counter.value.value = 1
        loop.run()
        #expect(try registry.contains(1) == false)
        #expect(registry.observations.isEmpty)
        counter.value.value = 2
        loop.run()
        #expect(try registry.contains(1) == false)
        h.finish()
    }

    /// Bad input gets typed errors.
    @Test func offLoopDeclarationsAndBadLimitsAreTypedErrors() async throws {
        let loop = TestLoop()
        #expect(throws: RegistryError.invalidObservationDepth(0)) {
            try TaskRegistry<Int>(loop: loop, configuration: .observationDepth(0))
        }
        let registry = TaskRegistry<Int>(loop: loop)
        let offLoop = PlainThread { () -> RegistryError? in
            do throws(RegistryError) {
                try registry.task(1, tracking: { 1 }) { _, _ in }
                return nil
            } catch {
                return error
            }
        }
        #expect(offLoop.join() == .calledOffLoopThread)
        #expect(try registry.counters.declared == 0)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }
}
