#if NIO
    import NIOCore
    import Synchronization
    import TaskLoopCore

    /// A `TaskLoop` over a SwiftNIO `EventLoop`, so that a NIO server (Hummingbird, Vapor, your
    /// own channel pipeline) runs `TaskRegistry`s on its own event loops, with no second thread:
    ///
    /// ```swift
    /// let loop = NIOTaskLoop(group.next())
    /// let registry = TaskRegistry<UserID>(loop: loop)
    /// try registry.task(user, id: query, debounce: .milliseconds(250)) { context in … }
    /// …
    /// await registry.shutdown()
    /// await loop.shutdown()                  // before the event loop group shuts down
    /// try await group.shutdownGracefully()
    /// ```
    ///
    /// What maps to what: the loop thread is the event loop's thread (`inLoop` is
    /// `inEventLoop`), `execute` is `EventLoop.execute`, the clock is `NIODeadline`'s monotonic
    /// uptime, timers and sleeps are `scheduleTask(deadline:)`, the serial executor is the event
    /// loop's own (`EventLoop.executor`), and as a task executor this loop runs each job on the
    /// event loop with `execute`.
    ///
    /// Differences from `UVLoop`, all because NIO's API is what it is:
    /// - **Shutdown is the owner's call.** NIO tells nobody when an event loop shuts down, so this
    ///   loop cannot learn it by itself: call `shutdown()` (or `startShutdown()`) before shutting
    ///   the event loop down. That runs the `onShutdown` hooks (a registry on this loop shuts down
    ///   there), wakes the sleeping tasks and closes the timers; afterwards `execute`, `makeTimer`
    ///   and sleeps throw `LoopError.shutDown`. Jobs of tasks still finishing keep running on the
    ///   event loop, which is still up. Work handed to an event loop that has already shut down is
    ///   dropped by NIO (it prints an error): a task waiting for it would never resume.
    /// - **Allocation per arm.** A `UVLoop` timer re-arms without allocating; here each `start`
    ///   schedules a new NIO task (a promise and a closure) and cancels the previous one.
    ///   Sleeps share one timer, as on `UVLoop` (a heap by deadline, armed for the earliest), so
    ///   a sleep re-arms it only when it is the earliest. The registry needs few timers (one per
    ///   distinct debounce or progress delay), so this is cheap for it.
    /// - **A closure per job.** NIO's `execute` takes a closure, so each job run through the task
    ///   executor face allocates one; the serial face is NIO's own.
    ///
    /// Unchecked `Sendable`: `lifecycle` is behind its lock, `acceptsWork` is atomic,
    /// `eventLoop`, `executor` and `services` are immutable and Sendable (the sleeps in `services`
    /// are touched only on the event loop's thread, as `openTimers` is).
    public final class NIOTaskLoop: TaskLoop, @unchecked Sendable, CustomStringConvertible {
        /// The event loop this loop runs on. May be read from any thread.
        public let eventLoop: any EventLoop

        /// The event loop's serial executor, for actors pinned to the loop (see
        /// `TaskLoop.executor`). Read once and kept: actors hold their executor unowned, and
        /// an event loop that is not NIO's own may return a new wrapper object on each read.
        ///
        /// May be read from any thread.
        public let executor: any SerialExecutor

        /// The loop's lifecycle, with what must change together with it.
        private struct Lifecycle {
            enum Stage {
                /// Accepting work; hooks are collected.
                case open
                /// `startShutdown()` was called; the shutdown runs on the event loop.
                case shutdownRequested
                /// The hooks have run, sleeps were woken, timers closed.
                case shutDown
            }
            var stage = Stage.open
            /// Tasks awaiting `shutdown()`.
            var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        }

        private let lifecycle = Locked(Lifecycle())
        /// The shutdown hooks and the sleeps' scheduler (see `TaskLoop.services`). May be read
        /// from any thread.
        public let services = LoopServices()
        /// False once the shutdown has run: `execute` reads it without taking the lock.
        private let acceptsWork = Atomic<Bool>(true)
        /// Timers created and not yet closed, closed by the shutdown. Event loop thread only.
        private var openTimers = OpenTimers<NIOLoopTimer>()

        /// Creates a task loop on `eventLoop`. The event loop must be running, and must outlive
        /// this loop's use: shut this loop down (`shutdown()`) before the event loop.
        ///
        /// May be called from any thread.
        public init(_ eventLoop: any EventLoop) {
            self.eventLoop = eventLoop
            self.executor = eventLoop.executor
        }

        /// `NIOTaskLoop(<event loop>)`. May be called from any thread.
        public var description: String { "NIOTaskLoop(\(eventLoop))" }

        // MARK: - TaskLoop

        /// The event loop's time: monotonic nanoseconds since boot, as `NIODeadline` counts
        /// them. Read through `EventLoop.now`, so that on a NIO test loop with virtual time the
        /// registry follows that virtual time.
        ///
        /// May be called from any thread.
        public var now: LoopInstant { LoopInstant(nanoseconds: eventLoop.now.uptimeNanoseconds) }

        /// Whether the calling thread is the event loop's thread. May be called from any thread.
        public var inLoop: Bool { eventLoop.inEventLoop }

        /// Runs `work` on the event loop, after the work already queued there.
        ///
        /// - Throws: `LoopError.shutDown` once `shutdown()` has run.
        /// - Note: May be called from any thread.
        public func execute(_ work: @escaping @Sendable () -> Void) throws(LoopError) {
            guard acceptsWork.load(ordering: .acquiring) else {
                throw LoopError(.shutDown, operation: "NIOTaskLoop.execute")
            }
            eventLoop.execute(work)
        }

        /// Creates a stopped one-shot timer on the event loop (see `NIOLoopTimer`).
        ///
        /// - Throws: `LoopError.calledOffLoopThread` off the event loop's thread, `.shutDown`
        ///   once `shutdown()` has run.
        /// - Note: Event loop thread only, like every use of the returned timer.
        public func makeTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> any LoopTimer {
            guard inLoop else { throw LoopError(.calledOffLoopThread, operation: "NIOTaskLoop.makeTimer") }
            guard acceptsWork.load(ordering: .acquiring) else {
                throw LoopError(.shutDown, operation: "NIOTaskLoop.makeTimer")
            }
            let timer = NIOLoopTimer(loop: self, onFire: onFire)
            openTimers.add(timer)
            return timer
        }
        /// Runs a job of a task that prefers this loop (`Task(executorPreference: loop)`, the
        /// registry's actions) on the event loop, with this loop as its task executor.
        ///
        /// - Note: Called by the runtime from any thread.
        public func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            // Not NIO's own `EventLoop.enqueue`: that runs the job on the event loop's serial
            // executor, and a task's job must run on its task executor.
            eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }

        /// The loop as a task executor. May be called from any thread.
        public func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }

        // MARK: - Shutdown

        /// Starts the shutdown: on the event loop thread, runs the `onShutdown` hooks (a
        /// registry on this loop cancels its runs and closes its timers there), then wakes every
        /// sleeping task with `CancellationError` and closes every timer still open. From then
        /// on `execute`, `makeTimer` and sleeps throw `LoopError.shutDown`. The event loop itself
        /// keeps running: it belongs to its group. Idempotent.
        ///
        /// - Note: May be called from any thread. Call it before the event loop shuts down: on an
        ///   event loop already shut down, NIO drops the work and the hooks never run.
        public func startShutdown() {
            let first = lifecycle.withLock { state -> Bool in
                guard state.stage == .open else { return false }
                state.stage = .shutdownRequested
                return true
            }
            guard first else { return }
            if inLoop {
                runShutdown()
            } else {
                eventLoop.execute { self.runShutdown() }
            }
        }

        /// Shuts down (see `startShutdown()`) and returns once the hooks have run, the sleeps
        /// have been woken and the timers closed. It does not wait for the tasks those wake-ups
        /// end: `await registry.shutdown()` does that for a registry's actions.
        ///
        /// - Note: May be called from any task (on the event loop's thread the shutdown runs at
        ///   once); from synchronous code, call `startShutdown()`.
        public func shutdown() async {
            startShutdown()
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = lifecycle.withLock { state -> Bool in
                    guard state.stage != .shutDown else { return true }
                    state.shutdownWaiters.append(continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        }

        /// Whether the shutdown has run. May be called from any thread.
        public var isShutDown: Bool { !acceptsWork.load(ordering: .acquiring) }

        /// Timers created and not yet closed; 0 after the shutdown. Event loop thread only.
        public var openTimerCount: Int {
            preconditionInLoop()
            return openTimers.count
        }

        /// The shutdown itself, on the event loop thread: hooks first, so that the owners of
        /// loop state (registries) settle it while the loop still accepts work, then the
        /// sleeps and timers that are left.
        private func runShutdown() {
            preconditionInLoop()
            services.shutdownHooks.runOnce()
            let waiters = lifecycle.withLock { state in
                state.stage = .shutDown
                defer { state.shutdownWaiters = [] }
                return state.shutdownWaiters
            }
            acceptsWork.store(false, ordering: .releasing)
            // After `acceptsWork`: a sleep that reaches the loop later finds no timer, asks for
            // one and is refused with `LoopError.shutDown`.
            services.sleepers.cancelAll()
            for timer in openTimers.snapshot { timer.closeForShutdown() }
            for waiter in waiters { waiter.resume() }
        }

        /// Forgets a timer that closed. Event loop thread only.
        func timerClosed(_ timer: NIOLoopTimer) {
            openTimers.remove(timer)
        }
    }
#endif
