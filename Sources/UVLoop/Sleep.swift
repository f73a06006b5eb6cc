/// The state of one `sleep(until:)` call, touched only on the loop thread.
///
/// Cancellation and the timer race on the loop thread only, so a plain flag decides who
/// resumes the continuation: exactly one of timer, cancellation and shutdown does.
final class SleepRequest: @unchecked Sendable {
    var continuation: UnsafeContinuation<Void, any Error>?
    var timer: (any LoopTimer)?
    var cancelledBeforeStart = false

    /// Resumes the sleeper with `error` (or normally for `nil`) if nobody has yet.
    func finish(throwing error: (any Error)?, tracker: SleepTracker) {
        timer?.close()
        timer = nil
        tracker.remove(self)
        guard let continuation else { return }
        self.continuation = nil
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }
}

/// The sleeps in progress on one loop, so that shutdown can wake every one of them.
/// Loop thread only.
final class SleepTracker: @unchecked Sendable {
    private var sleeping: [ObjectIdentifier: SleepRequest] = [:]

    var count: Int { sleeping.count }

    func add(_ request: SleepRequest) { sleeping[ObjectIdentifier(request)] = request }
    func remove(_ request: SleepRequest) { sleeping[ObjectIdentifier(request)] = nil }

    /// Wakes every sleeper with `CancellationError` (loop shutdown).
    func cancelAll() {
        for request in Array(sleeping.values) {
            request.finish(throwing: CancellationError(), tracker: self)
        }
    }
}

/// The one implementation of `sleep(until:)` shared by `UVLoop` and `TestLoop`.
enum SleepOperation {
    static func sleep(on loop: some TaskLoop, tracker: SleepTracker, until deadline: LoopInstant) async throws {
        let request = SleepRequest()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let arm: @Sendable () -> Void = {
                    if request.cancelledBeforeStart {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    let timer: any LoopTimer
                    do {
                        timer = try loop.makeTimer { request.finish(throwing: nil, tracker: tracker) }
                    } catch {
                        continuation.resume(throwing: error)
                        return
                    }
                    request.continuation = continuation
                    request.timer = timer
                    tracker.add(request)
                    do { try timer.start(at: deadline) } catch { request.finish(throwing: error, tracker: tracker) }
                }
                runOnLoop(loop, arm, orFail: { continuation.resume(throwing: $0) })
            }
        } onCancel: {
            runOnLoop(
                loop,
                {
                    if request.continuation == nil && request.timer == nil {
                        request.cancelledBeforeStart = true
                    } else {
                        request.finish(throwing: CancellationError(), tracker: tracker)
                    }
                },
                orFail: { _ in /* the loop is gone; its shutdown already woke the sleeper */ })
        }
    }

    /// Runs `work` at once on the loop thread, or posts it there from elsewhere.
    private static func runOnLoop(
        _ loop: some TaskLoop, _ work: @escaping @Sendable () -> Void, orFail: (LoopError) -> Void
    ) {
        if loop.inLoop {
            work()
            return
        }
        do { try loop.execute(work) } catch { orFail(error) }
    }
}

