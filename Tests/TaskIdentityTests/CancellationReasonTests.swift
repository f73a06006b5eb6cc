import Testing
import UVLoop

@testable import TaskIdentity

/// `TaskContext.cancellationReason` and `TaskContext.deadline`, read by the action itself: on
/// the loop, in a cancellation handler, off the loop on another thread, and by a run that keeps
/// executing while later runs of its slot are cancelled too. In virtual time.
@Suite("Inside the action: why it was cancelled, and its deadline")
struct CancellationReasonTests {
    /// A task whose action logs the reason it reads while running, then the reason it reads
    /// once its sleep is cancelled.
    static func declare(
        _ registry: TaskRegistry<String>, _ key: String, id: Int, log: EventLog, timeout: Duration? = nil,
        policy: RestartPolicy = .cancelPrevious
    ) throws {
        try registry.task(key, id: id, policy: policy, timeout: timeout) { context in
            log.add("\(key) \(id) running: \(String(describing: context.cancellationReason))")
            do { try await context.clock.sleep(for: .seconds(100)) } catch {
                log.add("\(key) \(id) cancelled: \(String(describing: context.cancellationReason))")
            }
        }
    }

    @Test("each cause reads as its own reason: a new identity, removal, time-out, cancel, shutdown")
    func eachCauseReadsAsItsReason() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try Self.declare(registry, "restarted", id: 1, log: log)
        try Self.declare(registry, "removed", id: 1, log: log)
        try Self.declare(registry, "timed", id: 1, log: log, timeout: .milliseconds(50))
        try Self.declare(registry, "cancelled", id: 1, log: log)
        try Self.declare(registry, "shutdown", id: 1, log: log)
        loop.run()
        #expect(
            log.take() == [
                "restarted 1 running: nil", "removed 1 running: nil", "timed 1 running: nil",
                "cancelled 1 running: nil", "shutdown 1 running: nil",
            ])
        try Self.declare(registry, "restarted", id: 2, log: log)
        try registry.remove("removed")
        try registry.cancel("cancelled")
        loop.advance(ms: 50)
        #expect(
            log.take() == [
                "restarted 1 cancelled: Optional(TaskIdentity.CancellationReason.identityChanged)",
                "removed 1 cancelled: Optional(TaskIdentity.CancellationReason.removed)",
                "cancelled 1 cancelled: Optional(TaskIdentity.CancellationReason.cancelledByCaller)",
                "restarted 2 running: nil",
                "timed 1 cancelled: Optional(TaskIdentity.CancellationReason.timedOut)",
            ])
        registry.startShutdown()
        loop.run()
        #expect(
            log.take().sorted() == [
                "restarted 2 cancelled: Optional(TaskIdentity.CancellationReason.registryShutDown)",
                "shutdown 1 cancelled: Optional(TaskIdentity.CancellationReason.registryShutDown)",
            ])
        h.finish()
    }

    /// A graceful shutdown's runs read `nil` during the grace period, and `registryShutDown`
    /// once it has run out.
    @Test func aRunPastTheGracePeriodReadsRegistryShutDown() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("slow", id: 1) { context in
            do { try await context.clock.sleep(for: .seconds(5)) } catch {
                log.add("cancelled: \(String(describing: context.cancellationReason))")
            }
        }
        try registry.task("quick", id: 1) { context in
            try await context.clock.sleep(for: .milliseconds(500))
            log.add("quick ends: \(String(describing: context.cancellationReason))")
        }
        loop.run()
        registry.startShutdown(gracePeriod: .seconds(1))
        loop.advance(ms: 999)
        #expect(log.take() == ["quick ends: nil"])
        loop.advance(ms: 1)
        loop.run()
        #expect(log.take() == ["cancelled: Optional(TaskIdentity.CancellationReason.registryShutDown)"])
        h.finish()
    }

    /// The handler of `withTaskCancellationHandler` runs as the registry cancels the run's
    /// task: the reason is already there.
    @Test func aCancellationHandlerReadsTheReason() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("a", id: 1) { context in
            try? await withTaskCancellationHandler {
                try await context.clock.sleep(for: .seconds(10))
            } onCancel: {
                log.add("handler: \(String(describing: context.cancellationReason))")
            }
        }
        loop.run()
        try registry.cancel("a")
        loop.run()
        #expect(log.take() == ["handler: Optional(TaskIdentity.CancellationReason.cancelledByCaller)"])
        h.finish()
    }

    /// A run that keeps executing after its time-out reads `timedOut` still, after two later
    /// runs of its slot were cancelled for new identities; each of those reads its own.
    @Test func aRunStillExecutingKeepsItsReasonWhileLaterRunsAreCancelled() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let held = Confined<[CheckedContinuation<Void, Never>]>([])
        func declare(_ id: Int) throws {
            try registry.task("a", id: id, timeout: .milliseconds(100)) { context in
                // Deaf to cancellation: executes until the test lets it go.
                await withCheckedContinuation { held.value.append($0) }
                log.add("\(id): \(String(describing: context.cancellationReason))")
            }
        }
        try declare(1)
        loop.advance(ms: 100)  // run 1 times out, and keeps executing
        try declare(2)
        loop.run()
        try declare(3)  // run 2 cancelled for the new identity
        loop.run()
        try registry.remove("a")  // run 3 removed
        loop.run()
        for continuation in held.value { continuation.resume() }
        held.value = []
        loop.run()
        #expect(
            log.take() == [
                "1: Optional(TaskIdentity.CancellationReason.timedOut)",
                "2: Optional(TaskIdentity.CancellationReason.identityChanged)",
                "3: Optional(TaskIdentity.CancellationReason.removed)",
            ])
        h.finish()
    }

    /// Off the loop, on another thread: the reason a run on an executor of its own reads.
    @Test func anActionOffTheLoopReadsItsReasonOnItsOwnThread() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let executor = ManualExecutor()
        let template = try TaskTemplate<String>(executor: .executor(executor)) { key, context in
            let id = context.id(as: Int.self)!
            log.add(
                "\(key) \(id) inLoop=\(loop.inLoop) cancelled=\(Task.isCancelled): "
                    + String(describing: context.cancellationReason))
        }
        try registry.task("a", id: 1, template: template)
        try registry.task("b", id: 1, template: template)
        try registry.task("c", id: 1, template: template)
        loop.run()  // the runs start on the loop; their actions wait for the executor
        try registry.task("a", id: 2, template: template)
        try registry.remove("b")
        loop.run()
        try executor.runOffLoop(during: loop)
        #expect(
            log.take().sorted() == [
                "a 1 inLoop=false cancelled=true: Optional(TaskIdentity.CancellationReason.identityChanged)",
                "a 2 inLoop=false cancelled=false: nil",
                "b 1 inLoop=false cancelled=true: Optional(TaskIdentity.CancellationReason.removed)",
                "c 1 inLoop=false cancelled=false: nil",
            ])
        h.finish()
    }

    /// A shared run is not cancelled while a slot stays in it: its leader moving on reads
    /// `nil`; the last slot's removal reads `removed`.
    @Test func aSharedRunReadsTheReasonOfItsLastSlotToLeave() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let step = Confined<CheckedContinuation<Void, Never>?>(nil)
        let template = try TaskTemplate<String>(sharesRuns: true) { key, context in
            guard context.id(as: String.self) == "q" else { return }
            await withCheckedContinuation { step.value = $0 }
            log.add("after the leader left: \(String(describing: context.cancellationReason))")
            do { try await context.clock.sleep(for: .seconds(10)) } catch {
                log.add("cancelled: \(String(describing: context.cancellationReason))")
            }
        }
        try registry.task("leader", id: "q", template: template)
        try registry.task("member", id: "q", template: template)
        loop.run()
        try registry.task("leader", id: "other", template: template)
        loop.run()
        step.value!.resume()
        loop.run()
        try registry.remove("member")
        loop.run()
        #expect(
            log.take() == [
                "after the leader left: nil", "cancelled: Optional(TaskIdentity.CancellationReason.removed)",
            ])
        h.finish()
    }

    /// A shared run alone with its first slot: that slot's cancellation cancels the run, and
    /// the handler reads its reason.
    @Test func aSharedRunCancelledWithItsOnlySlotReadsTheReason() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let template = try TaskTemplate<String>(sharesRuns: true) { key, context in
            try? await withTaskCancellationHandler {
                try await context.clock.sleep(for: .seconds(10))
            } onCancel: {
                log.add("handler: \(String(describing: context.cancellationReason))")
            }
        }
        try registry.task("a", id: "q", template: template)
        loop.run()
        try registry.task("a", id: "r", template: template)
        loop.run()
        #expect(log.take().first == "handler: Optional(TaskIdentity.CancellationReason.identityChanged)")
        try registry.remove("a")
        loop.run()
        #expect(log.take() == ["handler: Optional(TaskIdentity.CancellationReason.removed)"])
        h.finish()
    }

    /// `deadline` is the run's start plus its `timeout:`, on the loop's clock, each run its own;
    /// `nil` without a time limit.
    @Test func theDeadlineIsTheStartPlusTheTimeout() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ key: String, id: Int, timeout: Duration?) throws {
            try registry.task(key, id: id, timeout: timeout) { context in
                let deadline = context.deadline.map { "\($0.nanoseconds / 1_000_000) ms" } ?? "none"
                log.add("\(key) \(id) at \(loop.now.nanoseconds / 1_000_000): \(deadline)")
                try await context.clock.sleep(for: .seconds(10))
            }
        }
        loop.advance(ms: 7)
        try declare("limited", id: 1, timeout: .milliseconds(250))
        try declare("free", id: 1, timeout: nil)
        loop.run()
        loop.advance(ms: 30)
        try declare("limited", id: 2, timeout: .milliseconds(250))
        loop.run()
        #expect(log.take() == ["limited 1 at 7: 257 ms", "free 1 at 7: none", "limited 2 at 37: 287 ms"])
        h.finish()
    }
}

/// The record's run word: current, ended and cancelled (0) never meet for one generation.
@Suite("The run word of a record")
struct RunWordTests {
    @Test func currentEndedAndCancelledAreDistinctForEveryGeneration() {
        for generation in [UInt64(1), 2, 16_383, 16_384, 16_385, 32_768, 1 << 40] {
            let current = AnyTaskRecord.currentRunWord(generation)
            let ended = AnyTaskRecord.endedRunWord(generation)
            #expect(current != 0 && ended != 0 && current != ended, "generation \(generation)")
        }
    }
}
