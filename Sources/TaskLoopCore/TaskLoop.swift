/// What `UVLoop` (real time, libuv), `TestLoop` (virtual time) and, with the `NIO` trait,
/// `NIOTaskLoop` (in the `TaskLoopNIO` module) have in common: a task executor with a loop
/// thread, a serial executor on the same thread, a clock and timers. Code written against `TaskLoop` (the task
/// registry, for one) runs unchanged on either, so time-dependent logic is tested without
/// sleeping.
///
/// Every member says which thread may call it. "Loop thread" means: inside a job, closure or
/// timer callback that the loop is running.
///
/// A loop has two executor faces, and the type system keeps them apart:
/// - the loop itself is a `TaskExecutor`: `Task(executorPreference: loop) { … }` runs a task's
///   non-isolated code on the loop thread;
/// - `executor` is its `SerialExecutor`: an actor pinned to the loop writes
///   `nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }`.
///
/// A loop is not itself a `SerialExecutor`, so `UnownedSerialExecutor(ordinary: loop)`, which
/// would hand an actor's jobs to the task-executor face, does not compile.
public protocol TaskLoop: AnyObject, TaskExecutor, Sendable {
    /// The loop's serial executor: actors pinned to the loop run their jobs through it, on the
    /// loop thread, isolated to it. Owned by the loop, which outlives every actor that uses it
    /// only if the program keeps the loop alive (actors hold their executor unowned).
    ///
    /// May be read from any thread.
    var executor: any SerialExecutor { get }

    /// The loop's task-executor face, for `Task(executorPreference:)` and
    /// `withTaskExecutorPreference`: the loop itself.
    ///
    /// May be read from any thread.
    var taskExecutor: any TaskExecutor { get }

    /// The loop's current time. May be called from any thread.
    var now: LoopInstant { get }

    /// Whether the calling thread is the loop's thread. May be called from any thread.
    var inLoop: Bool { get }

    /// Whether the loop has started (it stays true after shutdown): before that, `execute`
    /// throws `LoopError.notStarted`. Loops that run from their creation answer `true`.
    ///
    /// May be read from any thread.
    var hasStarted: Bool { get }

    /// Runs `work` on the loop thread, after the work already queued.
    ///
    /// From the loop thread this appends to a local queue (no lock); from other threads it goes
    /// through the cross-thread queue, and one wake-up serves a whole batch of calls.
    /// - Throws: `LoopError` `.notStarted` or `.shutDown` when the loop cannot run it.
    /// - Note: May be called from any thread.
    func execute(_ work: @escaping @Sendable () -> Void) throws(LoopError)

    /// Creates a stopped one-shot timer that calls `onFire` on the loop thread.
    ///
    /// The timer's storage is allocated here, once; starting, re-arming and stopping it later
    /// allocate nothing.
    /// - Throws: `LoopError` `.calledOffLoopThread`, `.notStarted` or `.shutDown`, or a libuv error.
    /// - Note: Loop thread only, like every use of the returned timer.
    func makeTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> any LoopTimer

    /// The parts every loop kind keeps the same way (its shutdown hooks and its sleeps'
    /// scheduler), behind `onShutdown(_:)` and `sleep(until:)`, which this protocol's extension
    /// writes once for every loop. Not for callers. May be read from any thread.
    var services: LoopServices { get }
}

/// A one-shot timer owned by a loop. Re-arming (`start` again, while running or not) replaces
/// the previous deadline and allocates nothing, which is what debounce relies on.
///
/// Timers with equal deadlines fire in the order they were started. A callback may start, stop
/// or close any timer, its own included. Closing is final; the loop's shutdown closes every
/// timer still open.
///
/// Loop thread only: every member must be called on the owning loop's thread.
public protocol LoopTimer: AnyObject {
    /// Arms the timer to fire once, `delay` from now (a zero or negative delay fires on the
    /// next loop turn). Re-arms it if it is already running.
    /// - Throws: `LoopError` `.handleClosed` or `.shutDown` once the timer is closed.
    func start(after delay: Duration) throws(LoopError)

    /// Arms the timer to fire once at `deadline`, never before it. Re-arms it if running.
    /// - Throws: `LoopError` `.handleClosed` or `.shutDown` once the timer is closed.
    func start(at deadline: LoopInstant) throws(LoopError)

    /// Stops the timer if it is running; stopping a stopped or closed timer does nothing.
    func stop()

    /// Whether the timer is armed and has not fired yet.
    var isActive: Bool { get }

    /// Stops the timer and releases its handle; every later `start` throws. Idempotent.
    func close()
}

extension TaskLoop {
    /// The loop's clock, for `Task.sleep(for:clock:)`-style code and for `LoopClock.sleep`.
    ///
    /// May be called from any thread.
    public var clock: LoopClock { LoopClock(loop: self) }

    /// Stops the program with a message naming the caller if it is not on the loop thread.
    ///
    /// May be called from any thread (that is the point).
    public func preconditionInLoop(file: StaticString = #fileID, line: UInt = #line) {
        precondition(inLoop, "BUG DETECTED: called off the loop thread of \(self)", file: file, line: line)
    }

    /// Runs `body` on the loop thread and returns its result to the awaiting task.
    ///
    /// On the loop thread, `body` runs at once.
    /// - Throws: whatever `body` throws, or `LoopError` if the loop cannot run it.
    /// - Note: May be called from any task.
    public func submit<Result: Sendable>(
        _ body: @escaping @Sendable () throws -> Result
    ) async throws -> Result {
        if inLoop { return try body() }
        return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Result, any Error>) in
            do {
                try execute {
                    do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
                }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// The loop itself, as a task executor. May be read from any thread.
    public var taskExecutor: any TaskExecutor { self }

    /// `true`: a loop that needs no start runs from its creation. May be read from any thread.
    public var hasStarted: Bool { true }

    /// Sleeps for `duration` on the loop's timer (see `LoopClock`).
    ///
    /// May be called from any task.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: now.advanced(by: duration))
    }
}

// What every loop does the same way, once for all of them (see `LoopServices`).
extension TaskLoop {
    /// Registers `body` to run on the loop thread when the loop's shutdown begins, before it
    /// wakes sleeping tasks and closes its handles: where owners of loop state (a task
    /// registry) settle it.
    ///
    /// Registered once shutdown has begun (the hooks have run) or ended, `body` runs at once, on
    /// the calling thread, before `onShutdown` returns: an owner created on a loop that is
    /// already shut down is told so straight away, and settles itself as shut down.
    ///
    /// - Note: May be called from any thread.
    public func onShutdown(_ body: @escaping @Sendable () -> Void) {
        services.shutdownHooks.add(body)
    }

    /// Suspends the calling task until the loop's time reaches `deadline` (see `LoopClock`).
    ///
    /// - Throws: `CancellationError` when the task is cancelled or the loop shuts down while
    ///   sleeping; `LoopError` when the loop is not running.
    /// - Note: May be called from any task.
    public func sleep(until deadline: LoopInstant) async throws {
        try await SleepOperation.sleep(on: self, scheduler: services.sleepers, until: deadline)
    }
}
