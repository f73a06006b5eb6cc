import Testing

@testable import TaskIdentity

/// Ended runs' tasks are kept for the next start pass, one released before each start, so that
/// their memory is reused from malloc's per-thread cache (`RegistryCore.retireTask`).
@Suite("Ended tasks: kept for the next start pass, bounded, released at shutdown")
struct EndedTaskTests {
    @Test func eachStartReleasesOneEndedTaskAndTheKeptAreBounded() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry) = (h.loop, h.registry)
        let kept = StartPass.endedTasksKept
        for key in 0..<(kept + 100) { try registry.task(key, id: 1) { _ in } }
        loop.run()
        #expect(try registry.counters.finished == UInt64(kept + 100))
        #expect(registry.core.startPass.endedCount == kept, "at most \(kept) ended tasks are kept")
        for key in 0..<10 { try registry.task(key, id: 2) { _ in } }
        loop.run()
        // The pass released 10 before its 10 starts; their 10 runs ended and were kept again.
        #expect(registry.core.startPass.endedCount == kept)
        h.finish()
    }

    @Test func aCancelledRunIsNotKept() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        try registry.task("a", id: 1) { context in try await context.clock.sleep(for: .seconds(1)) }
        loop.run()
        try registry.task("a", id: 2) { context in try await context.clock.sleep(for: .seconds(1)) }
        loop.run()
        // Run 1 was cancelled: its handle went with the cancellation, not to the kept tasks.
        #expect(registry.core.startPass.endedCount == 0)
        loop.advance(ms: 1_000)
        #expect(registry.core.startPass.endedCount == 1, "run 2 ended on its own")
        h.finish()
    }
}
