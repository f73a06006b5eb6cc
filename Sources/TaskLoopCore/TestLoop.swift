import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A deterministic loop with manual, virtual time, for testing time-dependent code without
/// sleeping (in the manner of an embedded event loop and a test clock).
///
/// It offers the same executor, clock and timers as `UVLoop`, but nothing runs until the test
/// says so: `run()` runs queued work until none is left, and `advance(by:)` moves time forward
/// step by step, firing due timers in deadline order (equal deadlines in the order they were
/// started) and running the work each one causes before the next.
///
/// ```swift
/// let loop = TestLoop()
/// let task = Task(executorPreference: loop) { try await loop.clock.sleep(for: .seconds(1)) }
/// loop.run()                          // the task starts and arms its timer
/// loop.advance(by: .milliseconds(999)) // not yet
/// loop.advance(by: .milliseconds(1))   // the timer fires and the task finishes
/// ```
///
/// Threading: the loop thread is the thread that created the loop. Create it and drive it
/// (`run`, `advance`, `shutdown`) from that one thread, in a synchronous test function, so
/// that test code may also create timers and call loop-thread APIs directly between steps;
/// driving it from another thread is a programming error and traps. `inLoop` is true only on
/// that thread, so a test catches code that breaks a loop-thread rule. Jobs and `execute`
/// closures may be enqueued from any thread; they run at the next `run`/`advance`. (An async
/// test function may resume on another thread after an `await`: create the loop after the
/// last `await`, or drive it from a synchronous helper.)
///
/// Unchecked `Sendable`: the queue is behind a lock, the clock atomic, the rest creating-thread only.
public final class TestLoop: TaskLoop, LoopJobSink, @unchecked Sendable, CustomStringConvertible {
    private struct Queue {
        var work = PriorityWorkQueue()
        var shutDown = false
        var trampolineRunning = false
    }

    private let queue = Locked(Queue())
    /// The shutdown hooks and the sleeps' scheduler (see `TaskLoop.services`). May be read from
    /// any thread.
    public let services = LoopServices()
    private let virtualNanoseconds: Atomic<UInt64>
    /// The thread that created the loop: its loop thread.
    private let ownerThread = pthread_self()
    /// How many `run`/`advance`/`shutdown` calls are under way (they nest: a job may run the
    /// loop). Creating thread only.
    private var drivingDepth = 0
    private var serialExecutor: LoopSerialExecutor<TestLoop>!

    // Loop-thread state.
    private var timers = DeadlineHeap<TestTimer>()
    private var nextStartSequence: UInt64 = 0
    private var openTimers = OpenTimers<TestTimer>()
    private var acceptsNewWork = true

    /// Creates a test loop whose clock starts at `start` (default: 0), bound to the calling
    /// thread: that thread becomes its loop thread.
    ///
    /// May be called from any thread, which must then be the one that drives the loop.
    public init(startingAt start: LoopInstant = LoopInstant(nanoseconds: 0)) {
        virtualNanoseconds = Atomic(start.nanoseconds)
        serialExecutor = LoopSerialExecutor(loop: self)
    }

    deinit {
        // First: an executor kept past the loop must not reach it, and actors' jobs still queued
        // (a test loop dropped without shutdown) run on it instead of being lost.
        var queued: [UnownedJob] = []
        queue.withLock { state in
            while let work = state.work.popFirst() { if let job = work.serialJob { queued.append(job) } }
        }
        serialExecutor.loopDeinitialising(leftovers: queued)
        // Dropped without `shutdown()` (allowed for a test loop): the timers still open may
        // outlive it (their owners release them after this), and must not reach back into it.
        for timer in openTimers.snapshot { timer.detachFromDeinitialisingLoop() }
    }

    /// `TestLoop(now: …)`.
    public var description: String { "TestLoop(now: \(now))" }

    // MARK: - Driving time

    /// Runs queued jobs and closures, and timers already due, until none is left, without
    /// moving time (a zero-delay timer fires here, as on the next turn of a real loop).
    ///
    /// - Note: Loop thread (the creating thread) only; traps elsewhere.
    public func run() {
        advance(to: now)
    }

    /// Moves virtual time forward by `duration`, firing due timers in order and running the
    /// work each one causes; ends at exactly `now + duration` with the queue empty.
    ///
    /// - Note: Loop thread (the creating thread) only; traps elsewhere.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves virtual time forward to `deadline` (see `advance(by:)`). Time never goes back:
    /// an earlier deadline only runs queued work.
    ///
    /// - Note: Loop thread (the creating thread) only; traps elsewhere.
    public func advance(to deadline: LoopInstant) {
        asRunner {
            runQueuedWork()
            while let timer = timers.first, timer.deadline <= deadline.nanoseconds {
                timers.removeFirst()
                setNow(timer.deadline)
                timer.onFire?()
                runQueuedWork()
            }
            setNow(deadline.nanoseconds)
            runQueuedWork()
        }
    }

    /// Shuts the loop down like `UVLoop` does: wakes sleeping tasks with `CancellationError`,
    /// closes every open timer and runs the work that causes. Afterwards `execute`,
    /// `makeTimer` and sleeps throw `LoopError.shutDown`. Idempotent.
    ///
    /// - Note: Loop thread (the creating thread) only; traps elsewhere.
    public func shutdown() {
        asRunner {
            guard acceptsNewWork else { return }
            services.shutdownHooks.runOnce()
            acceptsNewWork = false
            services.sleepers.cancelAll()
            for timer in openTimers.snapshot { timer.closeForShutdown() }
            runQueuedWork()
            queue.withLock { $0.shutDown = true }
        }
    }

    /// Timers created and not yet closed. 0 after `shutdown()`. Loop thread only.
    public var openTimerCount: Int { openTimers.count }

    /// Timers armed and not yet fired. Loop thread only.
    public var activeTimerCount: Int { timers.count }

    /// Jobs and closures waiting for `run`/`advance`. May be called from any thread.
    public var queuedWorkCount: Int { queue.withLock { $0.work.count } }

    /// The deadline of the earliest armed timer, if any. Loop thread only.
    public var nextDeadline: LoopInstant? { timers.first.map { LoopInstant(nanoseconds: $0.deadline) } }

    // MARK: - TaskLoop

    /// The virtual time. May be called from any thread.
    public var now: LoopInstant { LoopInstant(nanoseconds: virtualNanoseconds.load(ordering: .acquiring)) }

    /// Whether the calling thread is the one that created the loop (its loop thread). May be
    /// called from any thread.
    public var inLoop: Bool { pthread_equal(pthread_self(), ownerThread) != 0 }

    /// Queues `work` for the next `run`/`advance`.
    ///
    /// - Throws: `LoopError.shutDown` after `shutdown()`.
    /// - Note: May be called from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(LoopError) {
        try queue.withLock { (state) throws(LoopError) in
            if state.shutDown { throw LoopError(.shutDown, operation: "TestLoop.execute") }
            state.work.append(.closure(work), priority: closurePriority)
        }
    }

    /// Creates a stopped virtual timer.
    ///
    /// - Throws: `LoopError.calledOffLoopThread` or `.shutDown`.
    /// - Note: Loop thread only.
    public func makeTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> any LoopTimer {
        guard inLoop else { throw LoopError(.calledOffLoopThread, operation: "TestLoop.makeTimer") }
        guard acceptsNewWork else { throw LoopError(.shutDown, operation: "TestLoop.makeTimer") }
        let timer = TestTimer(loop: self, onFire: onFire)
        openTimers.add(timer)
        return timer
    }
    /// Queues a job from the runtime for the next `run`/`advance` (after shutdown, runs it on
    /// the calling thread so no task is left hanging).
    ///
    /// - Note: Called by the runtime from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        enqueue(.taskJob(UnownedJob(job)), priority: priority)
    }

    /// Queues a job or closure from any thread (see `enqueue(_:)`).
    @usableFromInline package func enqueue(_ work: LoopWork, priority: UInt8) {
        let runInline = queue.withLock { state -> Bool in
            state.work.append(work, priority: priority)
            guard state.shutDown, !state.trampolineRunning else { return false }
            state.trampolineRunning = true
            return true
        }
        if runInline {
            while let next = queue.withLock({ state -> LoopWork? in
                let next = state.work.popFirst()
                if next == nil { state.trampolineRunning = false }
                return next
            }) {
                next.run(on: self)
            }
        }
    }

    /// The loop's serial executor, for actors pinned to it (see `TaskLoop.executor`). May be
    /// read from any thread.
    public var executor: any SerialExecutor { serialExecutor.handOut() }

    @usableFromInline package var unownedSerialExecutor: UnownedSerialExecutor {
        serialExecutor.asUnownedSerialExecutor()
    }

    /// The loop as a task executor. May be called from any thread.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }

    // MARK: - Internals

    private func setNow(_ nanoseconds: UInt64) {
        if nanoseconds > virtualNanoseconds.load(ordering: .relaxed) {
            virtualNanoseconds.store(nanoseconds, ordering: .releasing)
        }
    }

    /// Runs `body` as the loop (re-entrantly from a job or timer callback too), after checking
    /// that the caller is the loop's thread.
    private func asRunner(_ body: () -> Void) {
        precondition(inLoop, "BUG DETECTED: \(self) is driven from a thread other than the one that created it")
        drivingDepth += 1
        defer { drivingDepth -= 1 }
        body()
    }

    /// Whether `shutdown()` has begun: from then on jobs run on the threads that enqueue them,
    /// without anyone driving the loop. Loop thread only.
    package var hasShutDown: Bool { !acceptsNewWork }

    /// Whether a `run`, `advance` or `shutdown` of this loop is under way (its jobs and timers
    /// can run). Loop thread only: the creating thread is the only one that drives it.
    package var isBeingDriven: Bool { drivingDepth > 0 }

    private func runQueuedWork() {
        while let work = queue.withLock({ $0.work.popFirst() }) { work.run(on: self) }
    }

    fileprivate func arm(_ timer: TestTimer, at deadline: UInt64) {
        if timer.heapIndex >= 0 { timers.remove(timer) }
        timer.deadline = max(deadline, virtualNanoseconds.load(ordering: .relaxed))
        timer.sequence = nextStartSequence
        nextStartSequence &+= 1
        timers.insert(timer)
    }

    fileprivate func disarm(_ timer: TestTimer) {
        if timer.heapIndex >= 0 { timers.remove(timer) }
    }

    fileprivate func forget(_ timer: TestTimer) {
        disarm(timer)
        openTimers.remove(timer)
    }
}

/// A virtual timer of a `TestLoop`. Loop thread only.
final class TestTimer: LoopTimer, DeadlineHeapNode {
    private unowned let loop: TestLoop
    /// Released at `close()`, as `UVTimer` does: a callback holding its timer is no cycle.
    private(set) var onFire: (() -> Void)?
    var deadline: UInt64 = 0
    var sequence: UInt64 = 0
    var heapIndex = -1
    private var closed = false
    private var closedByShutdown = false

    init(loop: TestLoop, onFire: @escaping () -> Void) {
        self.loop = loop
        self.onFire = onFire
    }

    deinit { close() }

    // A closed timer never reaches its loop, which may be gone (see `detachFromDeinitialisingLoop`).

    func start(after delay: Duration) throws(LoopError) {
        guard !closed else { throw closedError() }
        loop.arm(self, at: loop.now.advanced(by: delay).nanoseconds)
    }

    func start(at deadline: LoopInstant) throws(LoopError) {
        guard !closed else { throw closedError() }
        loop.arm(self, at: deadline.nanoseconds)
    }

    func stop() {
        guard !closed else { return }
        loop.disarm(self)
    }

    private func closedError() -> LoopError {
        LoopError(closedByShutdown ? .shutDown : .handleClosed, operation: "TestTimer.start")
    }

    var isActive: Bool { heapIndex >= 0 }

    func close() {
        guard !closed else { return }
        closed = true
        onFire = nil
        loop.forget(self)
    }

    func closeForShutdown() {
        closedByShutdown = true
        close()
    }

    /// Closes the timer without touching its loop, which is being deinitialised.
    func detachFromDeinitialisingLoop() {
        closed = true
        onFire = nil
        heapIndex = -1
    }
}
