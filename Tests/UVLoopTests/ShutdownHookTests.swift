import Testing

@testable import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

@Suite("onShutdown hooks, before and after shutdown")
struct ShutdownHookTests {
    /// Records each run of a hook with whether it ran on the thread that registered it.
    final class HookRuns: Sendable {
        let runs = Locked<[Bool]>([])
        func hook(registeredOn thread: pthread_t) -> @Sendable () -> Void {
            { self.runs.withLock { $0.append(pthread_equal(pthread_self(), thread) != 0) } }
        }
        var snapshot: [Bool] { runs.withLock { $0 } }
    }

    @Test func testLoopRunsAHookRegisteredAfterShutdownAtOnceOnTheCallingThread() {
        let loop = TestLoop()
        let before = HookRuns(), after = HookRuns()
        loop.onShutdown(before.hook(registeredOn: pthread_self()))
        #expect(before.snapshot.isEmpty)
        loop.shutdown()
        #expect(before.snapshot == [true])
        loop.onShutdown(after.hook(registeredOn: pthread_self()))
        #expect(after.snapshot == [true], "ran before onShutdown returned, on this thread")
        loop.shutdown()
        #expect(before.snapshot == [true] && after.snapshot == [true], "each hook runs once")
    }

    @Test func uvLoopRunsAHookRegisteredAfterShutdownAtOnceOnTheCallingThread() throws {
        let loop = UVLoop(name: "hooks")
        try loop.start()
        let before = HookRuns(), after = HookRuns()
        loop.onShutdown(before.hook(registeredOn: pthread_self()))
        try loop.syncShutdown()
        #expect(before.snapshot == [false], "ran on the loop thread")
        loop.onShutdown(after.hook(registeredOn: pthread_self()))
        #expect(after.snapshot == [true], "ran before onShutdown returned, on this thread")
    }

    @Test func uvLoopShutDownBeforeStartingRunsItsHooks() throws {
        let loop = UVLoop(name: "never-started")
        let before = HookRuns(), after = HookRuns()
        loop.onShutdown(before.hook(registeredOn: pthread_self()))
        try loop.syncShutdown()
        #expect(before.snapshot == [true])
        loop.onShutdown(after.hook(registeredOn: pthread_self()))
        #expect(after.snapshot == [true])
    }
}
