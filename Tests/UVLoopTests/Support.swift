import Dispatch
import Testing

@testable import UVLoop

/// Mutable state that a test touches only on one loop's thread (or, for `TestLoop`, only from
/// the test's own steps), so it needs no lock.
final class LoopConfined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Starts a loop, runs `body`, and always shuts the loop down and checks it closed cleanly.
func withStartedLoop(
    _ body: (UVLoop) async throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let loop = UVLoop(name: "test")
    try loop.start()
    do {
        try await body(loop)
    } catch {
        try loop.syncShutdown()
        throw error
    }
    try loop.syncShutdown()
    #expect(loop.loopCloseResult == 0, sourceLocation: sourceLocation)
    #expect(loop.liveHandleCount == 0, sourceLocation: sourceLocation)
}

/// An actor whose every method runs on the loop thread.
actor PinnedCounter {
    let loop: UVLoop
    var count = 0
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }
    init(loop: UVLoop) { self.loop = loop }

    func incrementReportingThread() -> Bool {
        count += 1
        return loop.inLoop
    }
}

/// Runs `body` on the loop thread and resumes when it (or a callback it set up) calls `done`.
/// Timers give the ordering: a "barrier" timer that fires later than the ones under test
/// proves what they did by then, with no sleeping in the test.
func onLoop(
    _ loop: UVLoop, _ body: @escaping @Sendable (_ done: @escaping () -> Void) throws -> Void
) async throws {
    try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
        do {
            try loop.execute {
                do { try body { continuation.resume() } } catch { continuation.resume(throwing: error) }
            }
        } catch {
            continuation.resume(throwing: error)
        }
    }
}

/// Keeps loop-thread objects (timers) alive until the loop's callbacks are done with them, and
/// releases them on the loop thread: a timer closed anywhere else would race the loop (and
/// trips `UVTimer`'s thread check).
// Unchecked Sendable: `objects` is touched on the loop thread, or by the test before and after.
final class Keep: @unchecked Sendable {
    private let loop: UVLoop
    var objects: [AnyObject] = []

    init(_ loop: UVLoop) { self.loop = loop }

    deinit {
        let kept = UncheckedBox(objects)  // moved to the loop thread, used only there
        objects = []
        // After the loop's shutdown every handle is closed already: releasing here is safe.
        try? loop.execute { _ = kept }
    }

    func callAsFunction<T: AnyObject>(_ object: T) -> T {
        objects.append(object)
        return object
    }
}
