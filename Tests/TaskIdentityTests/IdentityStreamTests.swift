import Observation
import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

private struct FeedBroke: Error, Equatable {}

/// `task(_:identities:…)`: a task driven by a sequence of identities, one consumer per task.
/// In virtual time on the test loop, then the same lifecycle on a real `UVLoop`.
@Suite("A task driven by a sequence of identities")
struct IdentityStreamTests {
    /// A task of slot "a" following `stream`, whose runs log their start, their cancellation,
    /// and their end after 100 ms of loop time.
    static func follow(
        _ registry: TaskRegistry<String>, _ stream: AsyncStream<Int>, log: EventLog, debounce: Duration = .zero,
        whenFinished: IdentitiesEnd = .removeSlot
    ) throws {
        try registry.task("a", identities: stream, whenFinished: whenFinished, debounce: debounce) { id, context in
            log.add("\(id) starts")
            do { try await context.clock.sleep(for: .milliseconds(100)) } catch {
                log.add("\(id) cancelled")
                throw error
            }
            context.commit { log.add("\(id) landed") }
        }
    }

    @Test func eachElementRestartsTheRun() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        try Self.follow(registry, stream, log: log)
        loop.advance(ms: 0)
        #expect(try registry.phase(of: "a") == nil, "nothing is declared before the first element")
        input.yield(1)
        loop.advance(ms: 10)
        input.yield(2)
        loop.advance(ms: 10)
        input.yield(2)  // equal: the run goes on
        loop.advance(ms: 100)
        #expect(log.take() == ["1 starts", "1 cancelled", "2 starts", "2 landed"])
        let counters = try registry.counters
        #expect(counters.declared == 3 && counters.unchanged == 1 && counters.started == 2)
        input.finish()
        h.finish()
    }

    @Test func aBurstUnderDebounceRunsOnlyItsLast() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        try Self.follow(registry, stream, log: log, debounce: .milliseconds(50))
        for id in 1...5 {
            input.yield(id)
            loop.advance(ms: 10)
        }
        loop.advance(ms: 40)
        #expect(log.take() == ["5 starts"])
        loop.advance(ms: 100)
        #expect(log.take() == ["5 landed"])
        #expect(try registry.counters.started == 1)
        input.finish()
        h.finish()
    }

    @Test func theSequenceEndingRemovesTheSlot() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        try Self.follow(registry, stream, log: log)
        let phases = PhaseRecorder(registry, "a")
        input.yield(1)
        loop.advance(ms: 10)
        input.finish()
        loop.advance(ms: 10)
        #expect(log.take() == ["1 starts", "1 cancelled"])
        #expect(phases.take() == ["g1 running", "g1 cancelled(removed)"])
        #expect(try !registry.contains("a"))
        #expect(registry.identityStreams.isEmpty)
        h.finish()
    }

    @Test func theSequenceEndingCanKeepTheLastRun() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        try Self.follow(registry, stream, log: log, whenFinished: .keepLastRun)
        input.yield(1)
        loop.advance(ms: 10)
        input.finish()
        loop.advance(ms: 100)
        #expect(log.take() == ["1 starts", "1 landed"])
        #expect(try registry.phase(of: "a")?.description == "finished")
        #expect(registry.identityStreams.isEmpty)
        h.finish()
    }

    @Test func theSequenceThrowingFailsTheTaskWithItsError() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (stream, input) = AsyncThrowingStream.makeStream(of: Int.self)
        try registry.task("a", identities: stream, debounce: .milliseconds(20)) { id, context in
            log.add("\(id) starts")
            do { try await context.clock.sleep(for: .milliseconds(100)) } catch {
                log.add("\(id) cancelled")
                throw error
            }
        }
        input.yield(1)
        loop.advance(ms: 30)
        input.finish(throwing: FeedBroke())
        loop.advance(ms: 0)
        #expect(log.take() == ["1 starts", "1 cancelled"], "failed at once, whatever the debounce")
        guard case .failed(let error as FeedBroke)? = try registry.phase(of: "a") else {
            Issue.record("expected failed(FeedBroke): \(String(describing: try registry.phase(of: "a")))")
            return
        }
        #expect(error == FeedBroke())
        #expect(try registry.contains("a"), "the failed task stays, its phase readable")
        h.finish()
    }

    @Test func removingTheSlotEndsTheIteration() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let terminated = Confined(false)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        input.onTermination = { _ in terminated.value = true }
        try Self.follow(registry, stream, log: log)
        input.yield(1)
        loop.advance(ms: 10)
        try registry.remove("a")
        loop.advance(ms: 0)
        #expect(terminated.value, "onTermination called")
        #expect(registry.identityStreams.isEmpty)
        // Later elements go nowhere: the slot stays removed.
        input.yield(2)
        loop.advance(ms: 100)
        #expect(log.take() == ["1 starts", "1 cancelled"])
        #expect(try !registry.contains("a"))
        h.finish()
    }

    /// Removed before its first element came (no record yet): the consumption stops all the same,
    /// by `remove` and by `removeAll(where:)`.
    @Test(arguments: [false, true])
    func removingBeforeTheFirstElementEndsTheIteration(byPredicate: Bool) throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let terminated = Confined(false)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        input.onTermination = { _ in terminated.value = true }
        try Self.follow(registry, stream, log: log)
        if byPredicate {
            #expect(try registry.removeAll { $0 == "a" } == 0, "no slot yet")
        } else {
            try registry.remove("a")
        }
        input.yield(1)
        loop.advance(ms: 100)
        #expect(terminated.value)
        #expect(log.take().isEmpty)
        #expect(try !registry.contains("a"))
        h.finish()
    }

    @Test func shutdownAndRedeclarationEndTheIteration() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (first, firstTerminated) = (AsyncStream.makeStream(of: Int.self), Confined(false))
        first.continuation.onTermination = { _ in firstTerminated.value = true }
        try Self.follow(registry, first.stream, log: log)
        let (second, secondTerminated) = (AsyncStream.makeStream(of: Int.self), Confined(false))
        second.continuation.onTermination = { _ in secondTerminated.value = true }
        try Self.follow(registry, second.stream, log: log)
        loop.advance(ms: 0)
        #expect(firstTerminated.value && !secondTerminated.value, "the new sequence replaced the old")
        first.continuation.yield(1)
        second.continuation.yield(2)
        loop.advance(ms: 10)
        #expect(log.take() == ["2 starts"])
        registry.startShutdown()
        loop.run()
        #expect(secondTerminated.value)
        h.finish()
    }

    /// Elements faster than the loop takes them: the sequence's buffering decides. All yielded
    /// before the loop runs, an unbounded stream's elements are all declared, in one turn, and
    /// only the last starts; `.bufferingNewest(1)` hands over only the latest.
    @Test(arguments: [false, true])
    func elementsFasterThanTheLoopFollowTheSequencesBuffering(newestOnly: Bool) throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let (stream, input) = AsyncStream.makeStream(
            of: Int.self, bufferingPolicy: newestOnly ? .bufferingNewest(1) : .unbounded)
        try Self.follow(registry, stream, log: log)
        for id in 1...100 { input.yield(id) }
        loop.advance(ms: 100)
        #expect(log.take() == ["100 starts", "100 landed"])
        let counters = try registry.counters
        #expect(counters.declared == (newestOnly ? 1 : 100))
        #expect(counters.started == 1)
        input.finish()
        h.finish()
    }

    /// On a real loop: a burst under debounce runs only its last element, and the sequence's end
    /// removes the slot. The window is long (a minute) and ended by `runNow` once the last
    /// element is declared, so nothing depends on how fast this machine is.
    @Test func onAUVLoopABurstRunsItsLastAndTheEndRemovesTheSlot() async throws {
        let loop = UVLoop(name: "identity-stream-burst")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        let (events, report) = AsyncStream.makeStream(of: String.self)
        var reports = events.makeAsyncIterator()
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        try registry.task("a", identities: stream, debounce: .seconds(60)) { id, _ in report.yield("\(id) runs") }
        for id in 1...3 { input.yield(id) }
        // Each element is a generation: wait, on the registry's own answers, for the third.
        while try await registry.snapshot(of: "a")?.generation != 3 { await registry.flush() }
        try registry.runNow("a")
        #expect(await reports.next() == "3 runs")
        while try await registry.snapshot(of: "a")?.phase.isFinal != true { await registry.flush() }
        input.finish()
        while try await registry.snapshot(of: "a") != nil { await registry.flush() }
        #expect(try await registry.countersSnapshot().started == 1)
        await registry.shutdown()
        await loop.shutdown()
    }

    /// The same lifecycle on a real loop, called from another thread (the test's), and awaited
    /// through the runs' own reports and the phase stream: no sleeps, no time windows.
    @Test func onAUVLoopFromAnotherThread() async throws {
        let loop = UVLoop(name: "identity-stream")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)
        let (events, report) = AsyncStream.makeStream(of: String.self)
        var reports = events.makeAsyncIterator()
        let terminated = Atomic<Bool>(false)
        let (stream, input) = AsyncStream.makeStream(of: Int.self)
        input.onTermination = { _ in terminated.store(true, ordering: .relaxed) }
        try registry.task("a", identities: stream) { id, _ in
            report.yield("\(id) starts")
            do { try await Task.sleep(for: .seconds(3600)) } catch {
                report.yield("\(id) cancelled")
                throw error
            }
        }
        input.yield(1)
        #expect(await reports.next() == "1 starts")
        input.yield(2)
        let restart: Set = [await reports.next(), await reports.next()]
        #expect(restart == ["1 cancelled", "2 starts"])
        try registry.remove("a")
        #expect(await reports.next() == "2 cancelled")
        await registry.flush()
        // The consumer's cancellation reaches the stream on the loop's next turn.
        while !terminated.load(ordering: .relaxed) { await registry.flush() }
        #expect(try await registry.snapshot(of: "a") == nil)
        // A throwing sequence, declared from this thread too.
        let (failing, failingInput) = AsyncThrowingStream.makeStream(of: Int.self)
        try registry.task("b", identities: failing) { _, _ in }
        let updates = registry.phaseUpdates(of: "b")
        failingInput.finish(throwing: FeedBroke())
        var failed = false
        for await update in updates {
            if case .failed(let error) = update.phase, error is FeedBroke {
                failed = true
                break
            }
        }
        #expect(failed)
        await registry.shutdown()
        await loop.shutdown()
    }
}

/// A search box's model, written on the loop thread.
@Observable
final class SearchBox: @unchecked Sendable {
    // @unchecked Sendable: written and read on the test loop's thread only (the test's steps
    // and the registry's consumer); `Observations` needs a Sendable closure to read it.
    var query = ""
}

@Suite("A task driven by Observations")
struct ObservationsStreamTests {
    /// Swift 6.2's `Observations` (SE-0475) turns `@Observable` state into a sequence: each
    /// value the model settles on between two loop turns is an identity.
    @Test func eachQueryTheModelSettlesOnRestartsTheSearch() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let box = SearchBox()
        box.query = "s"
        try registry.task("session", identities: Observations { box.query }) { query, context in
            log.add("\(query) starts")
            do { try await context.clock.sleep(for: .milliseconds(100)) } catch {
                log.add("\(query) cancelled")
                throw error
            }
            context.commit { log.add("\(query) landed") }
        }
        loop.advance(ms: 10)
        box.query = "sw"
        box.query = "swi"  // in the same turn: Observations hands over the value it settles on
        loop.advance(ms: 10)
        loop.advance(ms: 100)
        #expect(log.take() == ["s starts", "s cancelled", "swi starts", "swi landed"])
        try registry.remove("session")
        h.finish()
    }
}
