/// One `sleep(until:)` in progress. Loop thread only.
///
/// Unchecked `Sendable`: touched only on the loop thread; carried to it in `UncheckedBox`.
package final class SleepRequest: DeadlineHeapNode, @unchecked Sendable {
    package let deadline: UInt64
    package var sequence: UInt64 = 0
    package var heapIndex = -1
    package var continuation: UnsafeContinuation<Void, any Error>?
    /// Cancellation arrived before the sleep was scheduled on the loop.
    package var cancelledBeforeStart = false

    package init(deadline: UInt64) { self.deadline = deadline }
}

/// The sleeps of one loop: a heap by deadline under one loop timer, armed for the earliest.
///
/// One timer for all sleeps rather than a libuv handle per sleep: a sleep then costs one small
/// object and a heap insertion, with no handle to initialise and close (profiled: a server
/// whose every request starts a sleeping task spent most of its time there). The timer is still
/// the loop's own (a libuv timer on `UVLoop`, a virtual one on `TestLoop`, a scheduled task on
/// `NIOTaskLoop`), with its guarantees: never early, and on `UVLoop` millisecond resolution.
///
/// Shared by `UVLoop`, `TestLoop` and, in its own module, `NIOTaskLoop` (package access): each
/// owns one and sleeps through `SleepOperation`.
///
/// Loop thread only.
///
/// Unchecked `Sendable`: loop-thread only; the loops that own it are Sendable.
package final class SleepScheduler: @unchecked Sendable {
    // @exclusivity(unchecked), these five: loop-thread only and never accessed overlapping; no dynamic check per sleep.
    @exclusivity(unchecked) private var heap = DeadlineHeap<SleepRequest>()
    @exclusivity(unchecked) private var timer: (any LoopTimer)?
    /// The deadline the timer is armed for; nil when it is not armed. (Not `UInt64.max` as a
    /// sentinel: that is a real deadline, where saturated ones land.)
    @exclusivity(unchecked) private var armedDeadline: UInt64?
    @exclusivity(unchecked) private var nextSequence: UInt64 = 0
    @exclusivity(unchecked) private var due: [SleepRequest] = []

    /// An empty table, with no timer until the first sleep. May be called from any thread.
    package init() {}

    /// Sleeps waiting now. Loop thread only.
    package var count: Int { heap.count }

    /// Schedules `request`; resumes it when its deadline passes.
    /// - Throws: `LoopError` if the loop cannot make the timer (shut down).
    package func schedule(_ request: SleepRequest, on loop: some TaskLoop) throws(LoopError) {
        if timer == nil {
            // Both unowned: the loop owns this scheduler, which owns the timer, so the timer
            // fires only while both live; a strong `loop` here would be a cycle that keeps a
            // loop dropped without shutdown alive forever.
            timer = try loop.makeTimer { [unowned self, unowned loop] in self.fire(now: loop.now.nanoseconds) }
        }
        request.sequence = nextSequence
        nextSequence &+= 1
        heap.insert(request)
        if armedDeadline.map({ request.deadline < $0 }) ?? true { arm(request.deadline) }
    }

    /// Resumes `request` with `error` (normally for `nil`) if it is still waiting.
    package func finish(_ request: SleepRequest, throwing error: (any Error)?) {
        if request.heapIndex >= 0 {
            heap.remove(request)
            if heap.count == 0 && armedDeadline != nil {
                // Nothing left to wake: disarm. (A later deadline left armed would only cost a
                // spurious firing, so a non-empty heap keeps the timer as it is.)
                timer?.stop()
                armedDeadline = nil
            }
        }
        guard let continuation = request.continuation else { return }
        request.continuation = nil
        if let error { continuation.resume(throwing: error) } else { continuation.resume() }
    }

    private func arm(_ deadline: UInt64) {
        armedDeadline = deadline
        try? timer?.start(at: LoopInstant(nanoseconds: deadline))
    }

    private func fire(now: UInt64) {
        armedDeadline = nil
        // Collect first, resume after: resuming only enqueues jobs, but keep the heap settled.
        while let first = heap.first, first.deadline <= now {
            heap.removeFirst()
            due.append(first)
        }
        if let first = heap.first { arm(first.deadline) }
        for request in due { finish(request, throwing: nil) }
        due.removeAll(keepingCapacity: true)
    }

    /// Wakes every sleeper with `CancellationError` and closes the timer (loop shutdown); a
    /// sleep that reaches the loop later is refused, since the loop then makes no timer.
    /// Loop thread only.
    package func cancelAll() {
        for request in heap.nodes { finish(request, throwing: CancellationError()) }
        timer?.close()
        timer = nil
        armedDeadline = nil
    }
}

/// The one implementation of `sleep(until:)` shared by `UVLoop`, `TestLoop` and `NIOTaskLoop`.
package enum SleepOperation {
    /// Suspends the calling task until `loop`'s time reaches `deadline`, on `scheduler`'s timer.
    ///
    /// - Throws: `CancellationError` when the task is cancelled or the loop's shutdown wakes it;
    ///   `LoopError` when the loop refuses the work or the timer (`.shutDown`, `.notStarted`).
    /// - Note: May be called from any task; the scheduler is touched only on the loop thread.
    package static func sleep(
        on loop: some TaskLoop, scheduler: SleepScheduler, until deadline: LoopInstant
    ) async throws {
        let request = SleepRequest(deadline: deadline.nanoseconds)
        let box = UncheckedBox(request)
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
                let schedule: @Sendable () -> Void = {
                    let request = box.value
                    if request.cancelledBeforeStart {
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    request.continuation = continuation
                    do { try scheduler.schedule(request, on: loop) } catch {
                        request.continuation = nil
                        continuation.resume(throwing: error)
                    }
                }
                runOnLoop(loop, schedule, orFail: { continuation.resume(throwing: $0) })
            }
        } onCancel: {
            runOnLoop(
                loop,
                {
                    let request = box.value
                    if request.continuation == nil && request.heapIndex < 0 {
                        request.cancelledBeforeStart = true
                    } else {
                        scheduler.finish(request, throwing: CancellationError())
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
