import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

/// No public query traps off the loop, no declaration blocks a thread, and the errors say why.
@Suite("An API that never traps and never blocks")
struct AnyThreadAPITests {
    @Test func everySynchronousQueryThrowsOffTheLoopAndItsAsyncFormAnswers() async throws {
        let loop = UVLoop(name: "queries")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        try registry.task("a", id: 7, progressDelay: .zero) { context in
            context.commit(result: "seven")
            try await context.clock.sleep(for: .seconds(3600))
        }
        await registry.flush()
        // This test's thread is not the loop's: none of these may trap.
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.phase(of: "a") }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.showsProgress(of: "a") }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.generation(of: "a") }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.result(of: "a", as: String.self) }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.contains("a") }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.counters }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.openTimerCount }
        #expect(throws: RegistryError.calledOffLoopThread) { try registry.isShutDown }

        // Wait (on the loop, without sleeping) until the run has stored its result.
        var snapshot = try await registry.snapshot(of: "a")
        while snapshot?.result == nil {
            await Task.yield()
            snapshot = try await registry.snapshot(of: "a")
        }
        let phase: String? = snapshot?.phase.description
        #expect(phase == "running")
        let generation: UInt64? = snapshot?.generation
        #expect(generation == 1)
        #expect(snapshot?.result(as: String.self) == "seven")
        #expect(snapshot?.result(as: Int.self) == nil)
        #expect(try await registry.snapshot(of: "a", name: "other") == nil)
        #expect(try await registry.snapshot(of: "missing") == nil)
        let slot: [TaskName: TaskSnapshot] = try await registry.snapshot(ofSlot: "a")
        #expect(slot.count == 1)
        #expect(slot[TaskName.main]?.generation == 1)
        let missing: [TaskName: TaskSnapshot] = try await registry.snapshot(ofSlot: "missing")
        #expect(missing.isEmpty)
        #expect(try await registry.countersSnapshot().started == 1)
        await registry.shutdown()
        #expect(try await registry.snapshot(of: "a") == nil, "after the registry's shutdown every slot is gone")
        await loop.shutdown()
        await #expect(throws: RegistryError.shutDown) { try await registry.snapshot(of: "a") }
    }

    @Test func aRegistryOnALoopNotStartedRefusesWithoutClosingItself() async throws {
        let loop = UVLoop(name: "later")
        let registry = TaskRegistry<String>(loop: loop)
        #expect(throws: RegistryError.loopNotStarted) { try registry.task("a", id: 1) { _ in } }
        #expect(throws: RegistryError.loopNotStarted) { try registry.remove("a") }
        await #expect(throws: RegistryError.loopNotStarted) { try await registry.snapshot(of: "a") }
        await #expect(throws: RegistryError.loopNotStarted) { try await registry.countersSnapshot() }
        // Once the loop starts, the same registry works.
        try loop.start()
        try registry.task("a", id: 1) { _ in }
        await registry.flush()
        #expect(try await registry.countersSnapshot().declared == 1)
        await registry.shutdown()
        await loop.shutdown()
    }

    @Test func aFloodOfDeclarationsFromAnotherThreadIsRefusedNotBlocked() async throws {
        let loop = UVLoop(name: "flood")
        try loop.start()
        var configuration = RegistryConfiguration()
        configuration.postedCallLimit = 5_000
        let registry = try TaskRegistry<Int>(loop: loop, configuration: configuration)
        // Hold the loop thread, so that nothing drains the posted calls.
        let release = Flag()
        let holding = Flag()
        try loop.execute {
            holding.raise()
            while !release.isRaised {}
        }
        while !holding.isRaised { await Task.yield() }
        let limit = registry.configuration.postedCallLimit
        var accepted = 0
        var refused = 0
        let attempts: Int = limit + 100
        for key in 0..<attempts {
            switch declare(registry, slot: key % 1000, id: key)?.code {
            case nil: accepted += 1
            case .overloaded?: refused += 1
            default: Issue.record("unexpected error for declaration \(key)")
            }
        }
        // Every call returned (this thread was never parked), exactly the limit was queued,
        // and a removal is refused the same way.
        #expect(accepted == limit)
        #expect(refused == 100)
        #expect(throws: RegistryError.overloaded) { try registry.remove(1) }
        // What someone awaits is never refused: flush goes through once the loop runs again.
        release.raise()
        await registry.flush()
        let counters = try await registry.countersSnapshot()
        #expect(counters.declared == UInt64(limit), "nothing accepted was lost")
        // With the queue drained, declarations are accepted again.
        try registry.task(0, id: -1) { _ in }
        await registry.shutdown()
        await loop.shutdown()
    }

    @Test func registryErrorsMatchByCodeAndSayWhatHappened() {
        let error = RegistryError.invalidDuration(name: "debounce", .milliseconds(-5))
        #expect(error.code == .invalidDuration)
        #expect(error.description == "debounce must not be negative (got -0.005 seconds)")
        #expect(error != RegistryError(.invalidDuration))
        #expect(RegistryError.overloaded.description.contains("flush"))
        #expect(RegistryError.loopNotStarted.code.description == "loopNotStarted")
        #expect(RegistryError(.shutDown) == .shutDown)
        // The loop's error is kept, and says why, but is not compared.
        let refused = RegistryError(loopRefused: LoopError(.shutDown, operation: "execute"))
        #expect(refused == .shutDown)
        #expect(refused.loopError?.code == .shutDown)
        #expect(refused.description.hasPrefix("the task registry has shut down ("))
        let failed = RegistryError(loopRefused: LoopError(.libuv(-22), operation: "uv_async_send"))
        #expect(failed == RegistryError(.loopFailed))
        #expect(failed.description.hasPrefix("the registry's loop failed the call ("))
        #expect(failed.loopError?.code == .libuv(-22))
        #expect(Set([refused, RegistryError.shutDown]).count == 1)
    }

    /// A query from another thread after the loop shut down throws `shutDown`, with the loop's
    /// refusal as its cause.
    @Test func aQueryTheLoopRefusesKeepsTheLoopsError() async throws {
        let loop = UVLoop(name: "refusing")
        try loop.start()
        let registry = TaskRegistry<Int>(loop: loop)
        await loop.shutdown()
        do {
            _ = try await registry.snapshot(of: 1)
            Issue.record("a snapshot after the loop's shutdown answered")
        } catch {
            #expect(error == .shutDown)
            #expect(error.loopError?.code == .shutDown)
        }
    }
}

/// A flag one thread raises and another reads. `Sendable`: its one field is atomic.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .releasing) }
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}

/// Declares a task that does nothing; returns the error, if any. (A function of its own keeps
/// the typed-throws declaration out of the test's loop.)
private func declare(_ registry: TaskRegistry<Int>, slot: Int, id: Int) -> RegistryError? {
    do {
        try registry.task(slot, id: id) { _ in }
        return nil
    } catch {
        return error
    }
}
