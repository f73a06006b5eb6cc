import Dispatch
import Testing

@testable import UVLoop

/// An actor that keeps only a loop's executor, not the loop: what a user may write, and what
/// must stay safe after the loop is gone.
actor ExecutorKeeper {
    let executor: any SerialExecutor
    var calls: [Int] = []
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    init(executor: any SerialExecutor) { self.executor = executor }

    /// Records `value`, and whether the actor's executor says this job is isolated to it.
    func record(_ value: Int) -> Bool? {
        calls.append(value)
        return executor.isIsolatingCurrentContext()
    }
}

/// Runs under AddressSanitizer in `scripts/test --all`: a read of the released loop would be
/// reported there as a heap-use-after-free.
@Suite("A loop's executor kept past the loop", .timeLimit(.minutes(1)))
struct ExecutorLifetimeTests {
    /// Makes, starts and shuts down a loop, returning an actor pinned to its executor and a weak
    /// reference to the loop; the loop itself is released on return.
    private func keeperOfAReleasedLoop() async throws -> (ExecutorKeeper, () -> UVLoop?) {
        let loop = UVLoop(name: "released")
        try loop.start()
        let keeper = ExecutorKeeper(executor: loop.executor)
        let onLoop = await keeper.record(0)
        #expect(onLoop == true, "while the loop runs, the actor's job runs isolated on the loop thread")
        await loop.shutdown()
        weak let weakLoop = loop
        return (keeper, { weakLoop })
    }

    @Test("an actor pinned to a released loop's executor still runs every call, in order, isolated")
    func anActorOutlivesItsLoop() async throws {
        let (keeper, releasedLoop) = try await keeperOfAReleasedLoop()
        // The loop thread lets go of the loop just after `shutdown()` returns: wait for that
        // event (a call racing it is safe too: the executor's weak load sees the loop or not).
        while releasedLoop() != nil { await Task.yield() }
        for value in 1...100 {
            let isolated = await keeper.record(value)
            #expect(isolated == true, "call \(value): the job runs isolated to the executor, on the calling thread")
        }
        #expect(await keeper.calls == Array(0...100), "every call ran, once, in order")
        #expect(keeper.executor.isIsolatingCurrentContext() == false, "a thread outside the actor is not isolated")
    }

    @Test("calls from many threads to an actor of a released loop's executor run one at a time")
    func orphanedJobsStaySerial() async throws {
        let (keeper, releasedLoop) = try await keeperOfAReleasedLoop()
        // The loop thread lets go of the loop just after `shutdown()` returns: wait for that
        // event (a call racing it is safe too: the executor's weak load sees the loop or not).
        while releasedLoop() != nil { await Task.yield() }
        await withTaskGroup(of: Void.self) { group in
            for value in 1...400 {
                group.addTask { _ = await keeper.record(value) }
            }
        }
        let calls = await keeper.calls
        #expect(calls.count == 401, "no call lost or run twice (a race on the array would lose or crash)")
        #expect(Set(calls) == Set(0...400))
    }

    @Test("an actor's job queued on a loop that never started runs when the loop is released, not lost")
    func aJobQueuedOnANeverStartedLoopRunsAtItsRelease() async throws {
        var loop: UVLoop? = UVLoop(name: "never-started")
        let keeper = ExecutorKeeper(executor: loop!.executor)
        let call = Task { await keeper.record(7) }
        // The call's job waits in the loop's queue for a start that never comes.
        while loop!.crossThread.withLock({ $0.incoming.count }) == 0 { await Task.yield() }
        #expect(loop!.crossThread.withLock { $0.incoming.count } == 1, "queued, not run: the loop never started")
        loop = nil  // released, never started: its deinit hands the job to the executor
        _ = await call.value
        #expect(await keeper.calls == [7], "the queued job ran once")
    }
}
