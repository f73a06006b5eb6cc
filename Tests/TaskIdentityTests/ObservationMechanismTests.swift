import Observation
import Testing
import UVLoop

@testable import TaskIdentity

/// A model whose setter runs `duringWrite` after Observation's `willSet` report and before the
/// store: the place where a write made on another thread may be when the loop re-evaluates.
final class SlowStoreModel: Observable, @unchecked Sendable {
    // @unchecked Sendable: loop-thread only (the test loop's creating thread); handed to
    // `@Sendable` identity closures, which the registry calls on that thread alone.
    private let registrar = ObservationRegistrar()
    private var storage = 0
    /// Runs inside the next write, between the report before the store and the store.
    var duringWrite: (() -> Void)?

    var value: Int {
        get {
            registrar.access(self, keyPath: \.value)
            return storage
        }
        set {
            registrar.withMutation(of: self, keyPath: \.value) {
                if let hook = duringWrite {
                    duringWrite = nil
                    hook()
                }
                storage = newValue
            }
        }
    }
}

/// The behaviour of observed identities under each `ObservationMechanism` this build has: the
/// public `willSet` plus a hop (always; the only one by default, where the AddressSanitizer run
/// of `scripts/test --all` runs every observation test on it) and the SPI's `didSet` (with the
/// `ObservationSPI` trait, which `scripts/test` turns on).
@Suite("Observed identities under each Observation mechanism")
struct ObservationMechanismTests {
    private func harness(_ mechanism: ObservationMechanism) -> (TestLoop, TaskRegistry<String>) {
        let loop = TestLoop()
        return (
            loop, TaskRegistry<String>(loop: loop, checked: RegistryConfiguration(), observationMechanism: mechanism)
        )
    }

    private func finish(_ loop: TestLoop, _ registry: TaskRegistry<String>) throws {
        registry.startShutdown()
        loop.run()
        #expect(try registry.counters.runningActions == 0)
        loop.shutdown()
        #expect(loop.queuedWorkCount == 0)
    }

    @Test(arguments: ObservationMechanism.allCases)
    func aWriteOnTheLoopThreadRestartsWithItsValueAndABurstIsOneEvaluation(mechanism: ObservationMechanism) throws {
        let (loop, registry) = harness(mechanism)
        let log = EventLog()
        let model = LoopBound(Counter(), loop: loop)
        try registry.task("k", tracking: { model.value.value }) { value, _ in log.add("run \(value)") }
        loop.run()
        model.value.value = 1
        loop.run()
        #expect(log.take() == ["run 0", "run 1"])
        for value in 2...100 { model.value.value = value }
        model.value.other = 7  // not read by the identity: no evaluation
        loop.run()
        #expect(log.take() == ["run 100"])
        #expect(try registry.counters.identityEvaluations == 3)
        try finish(loop, registry)
    }

    /// The report comes on the writer's thread, inside its run, under both: a run that writes
    /// what its own identity reads is stopped as a cycle, with the chain in order.
    @Test(arguments: ObservationMechanism.allCases)
    func theWritersCausalLinkStopsACycle(mechanism: ObservationMechanism) throws {
        let loop = TestLoop()
        let registry = TaskRegistry<String>(
            loop: loop, checked: .observationDepth(3), observationMechanism: mechanism)
        let counter = LoopBound(Counter(), loop: loop)
        try registry.task("A", tracking: { counter.value.value }) { value, context in
            context.commit { counter.value.value = value + 1 }
        }
        loop.run()
        guard let error = try cycleError(of: "A", in: registry) else { return }
        #expect(error.chain.map(\.generation) == [1, 2, 3, 4, 5])
        #expect(counter.value.value == 4)
        #expect(try registry.counters.observationCyclesStopped == 1)
        try finish(loop, registry)
    }

    @Test(arguments: ObservationMechanism.allCases)
    func removalEndsTheTrackingAndFreesTheTracker(mechanism: ObservationMechanism) throws {
        let (loop, registry) = harness(mechanism)
        let model = LoopBound(Counter(), loop: loop)
        try registry.task("k", tracking: { model.value.value }) { _, _ in }
        loop.run()
        weak let tracker = registry.observations.values.first
        #expect(tracker != nil)
        try registry.remove("k")
        loop.run()
        #expect(tracker == nil, "the tracker is freed with its slot, its subscription disarmed")
        model.value.value = 1
        loop.run()
        #expect(try registry.counters.identityEvaluations == 1)
        try finish(loop, registry)
    }

    /// Where the two differ, made deterministic: the loop re-evaluates while a write is
    /// between its report before the store and the store (what a write on another thread can
    /// be in). With `didSet` nothing has been reported yet, and the report after the store
    /// restarts the task with the new value. With `willSetAndHop` the re-evaluation reads the
    /// old value, and the write is seen only with the next one.
    @Test(arguments: ObservationMechanism.allCases)
    func aReEvaluationDuringAWriteBeforeItsStore(mechanism: ObservationMechanism) throws {
        let (loop, registry) = harness(mechanism)
        let log = EventLog()
        let model = SlowStoreModel()
        try registry.task("k", tracking: { model.value }) { value, _ in log.add("run \(value)") }
        loop.run()
        #expect(log.take() == ["run 0"])
        model.duringWrite = { loop.run() }  // the loop turns inside the write, before its store
        model.value = 1
        loop.run()
        switch mechanism {
        #if ObservationSPI
            case .didSet:
                #expect(log.take() == ["run 1"])
                #expect(try registry.counters.identityEvaluations == 2)
        #endif
        case .willSetAndHop:
            #expect(log.take() == [], "read before the store: unchanged")
            #expect(try registry.counters.identityEvaluations == 2)
            model.value = 2
            loop.run()
            #expect(log.take() == ["run 2"])
        }
        try finish(loop, registry)
    }
}
