import Testing

@testable import TaskIdentity

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `await registry.shutdown()` on a `TestLoop`'s own thread while nothing drives the loop:
/// nothing can run until the test returns, so it must not wait for an action.
@Suite("shutdown awaited on an undriven test loop")
struct UndrivenShutdownTests {
    @Test("with an action running, it stops the program and says what to call instead")
    func aRunningActionStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = TestLoop()
            let registry = TaskRegistry<String>(loop: loop)
            try? registry.task("stuck", id: 1) { _ in
                await withUnsafeContinuation { (_: UnsafeContinuation<Void, Never>) in }  // never ends
            }
            loop.run()
            await registry.shutdown()  // on the loop's own thread: nothing awaited before it
            exit(0)  // it returned: the check is missing
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("would wait forever"), "\(message)")
        #expect(message.contains("registry.startShutdown()"), "the message says what to do: \(message)")
    }

    @Test("with no action running, it shuts down and returns at once")
    func nothingRunningReturns() async throws {
        let loop = TestLoop()
        let registry = TaskRegistry<String>(loop: loop)
        try registry.task("debounced", id: 1, debounce: .seconds(1)) { _ in }
        loop.run()
        #expect(try registry.phase(of: "debounced")?.description == "waiting")
        await registry.shutdown()
        #expect(try registry.isShutDown)
        #expect(try registry.counters.cancelled == 1, "the waiting task was cancelled, never run")
        #expect(try registry.counters.started == 0)
        loop.run()
        loop.shutdown()
    }
}
