import CLibUV
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A libuv event loop on a thread of its own: a Swift `TaskExecutor` (with a `SerialExecutor`
/// for actors as `executor`), a clock, timers, TCP sockets and signal watchers.
///
/// ```swift
/// let loop = UVLoop(name: "io")
/// try loop.start()
/// let value = try await Task(executorPreference: loop) {
///     try await loop.clock.sleep(for: .milliseconds(10))   // a libuv timer
///     return 42                                            // still on the loop thread
/// }.value
/// try loop.syncShutdown()
/// ```
///
/// How work reaches the loop: a job or closure enqueued on the loop thread goes to a local
/// queue with no lock; from any other thread it goes through a locked cross-thread queue, and
/// only the first item of a batch pays for a wake-up (`uv_async_send`). Within a turn, higher
/// task priorities run first.
///
/// Lifecycle: `notStarted → starting → running → shutdownRequested → shuttingDown → shutDown`
/// (see `Lifecycle`). Shutdown wakes sleeping tasks
/// with `CancellationError`, closes every handle through `uv_close` (freed in its close
/// callback) and checks that `uv_loop_close` returns 0. After shutdown, `execute`, `makeTimer`
/// and sleeps throw `LoopError.shutDown`; jobs the runtime still enqueues (tasks finishing)
/// run on the enqueuing thread, one at a time, so no task is left hanging.
///
/// Thread safety: the class is `Sendable`; each member says which thread may call it.
///
/// Unchecked `Sendable`: shared state is behind `crossThread`'s lock or atomic; the rest is loop-thread only.
public final class UVLoop: TaskLoop, LoopJobSink, @unchecked Sendable, CustomStringConvertible {
    /// The loop's name, used in messages.
    public let name: String
    /// Where the loop's life and swallowed errors go (a swift-log logger with the Logging trait).
    let log: LibraryLog

    /// State shared with other threads, guarded by `crossThread`.
    struct CrossThreadState {
        var incoming: [(work: LoopWork, priority: UInt8)] = []
        var wakeupPending = false
        var trampolineRunning = false
        var shutdownWaiters: [UnsafeContinuation<Void, Never>] = []
    }

    private let crossThread = Locked(CrossThreadState())
    /// Changed only holding `crossThread`'s lock (see `Lifecycle`); read from anywhere.
    private let lifecycle = Atomic<Lifecycle>(.notStarted)
    /// `onShutdown` hooks; nil once they have run.
    private let shutdownHooks = ShutdownHooks()
    private let loopThreadID = Atomic<UInt>(0)
    private let liveHandles = Atomic<Int>(0)
    private let loopCloseStatus = Atomic<Int32>(Int32.min)
    private let stopped = OneShotSignal()
    private let started = OneShotSignal()
    private var serialExecutor: LoopSerialExecutor<UVLoop>!

    // Loop-thread state. The starting thread initialises it before the loop thread exists.
    // libuv structures at stable addresses, freed in deinit after uv_loop_close.
    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    private let idle: UnsafeMutablePointer<uv_idle_t>
    // @exclusivity(unchecked), these six: loop-thread only, never accessed overlapping; no dynamic check per job.
    @exclusivity(unchecked) private var local = PriorityWorkQueue()
    @exclusivity(unchecked) private var idleRunning = false
    @exclusivity(unchecked) private var runningLocalWork = false
    @exclusivity(unchecked) private var pollingCrossThread = false
    @exclusivity(unchecked) private var drainBuffer: [(work: LoopWork, priority: UInt8)] = []
    /// True while a timer callback runs (libuv's timer phase). Loop thread only.
    @exclusivity(unchecked) var inTimerPhase = false
    let sleepers = SleepScheduler()

    /// The most jobs one turn runs before letting libuv poll for I/O and timers, so that a task
    /// that keeps re-enqueueing itself cannot starve them.
    static let jobsPerTurn = 16_384

    /// The handles the loop keeps open for itself until the very end of shutdown: the wake-up
    /// (`uv_async_t`) and the idle handle. While shutting down, a live-handle count at this
    /// value means every timer, socket and signal watcher has been freed.
    static let ownHandleCount = 2

    /// Creates a loop that is not running yet; call `start()`.
    ///
    /// May be called from any thread.
    /// - Parameter name: used in messages and descriptions.
    public convenience init(name: String = "uv-loop") {
        self.init(name: name, log: LibraryLog())
    }

    init(name: String, log: LibraryLog) {
        self.name = name
        self.log = log
        uvLoop = .allocate(capacity: 1)
        wakeup = .allocate(capacity: 1)
        idle = .allocate(capacity: 1)
        serialExecutor = LoopSerialExecutor(loop: self)
    }

    deinit {
        serialExecutor.loopDeinitialising()  // first: an executor kept past the loop must not reach it
        // The loop thread holds a strong reference until it exits, so a loop that was started
        // is always shut down by the time it is deinitialised.
        let final = lifecycle.load(ordering: .acquiring)
        assert(final == .notStarted || final == .shutDown, "BUG DETECTED: \(self) deinitialised while \(final)")
        uvLoop.deallocate()
        wakeup.deallocate()
        idle.deallocate()
    }

    /// `UVLoop(name)`.
    public var description: String { "UVLoop(\(name))" }

    // MARK: - Lifecycle

    /// Starts the loop thread and returns once it is running.
    ///
    /// Jobs enqueued before `start()` run as soon as the loop is running.
    /// - Throws: `LoopError` `.alreadyStarted` if called twice, `.shutDown` after shutdown, or a
    ///   libuv error if the loop could not be created.
    /// - Note: May be called from any thread other than the loop's.
    public func start() throws(LoopError) {
        try crossThread.withLock { (state) throws(LoopError) in
            switch lifecycle.load(ordering: .relaxed) {
            case .notStarted: lifecycle.store(.starting, ordering: .releasing)
            case .starting, .running: throw LoopError(.alreadyStarted, operation: "UVLoop.start")
            case .shutdownRequestedWhileStarting, .shutdownRequested, .shuttingDown, .shutDown:
                throw LoopError(.shutDown, operation: "UVLoop.start")
            }
        }
        do {
            try LoopError.check(uv_loop_init(uvLoop), "uv_loop_init")
        } catch {
            endWithoutLoopThread()
            throw error
        }
        // Unretained: the loop thread holds the loop (passRetained below) until after uv_loop_close.
        let me = Unmanaged.passUnretained(self).toOpaque()
        uvLoop.pointee.data = me
        // Neither call can fail on Linux once the loop is initialised (they only allocate an
        // eventfd-backed watcher that uv_loop_init already created).
        uv_async_init(uvLoop, wakeup, uvLoopWakeupCallback)
        wakeup.pointee.data = me
        uv_idle_init(uvLoop, idle)
        idle.pointee.data = me
        liveHandles.add(Self.ownHandleCount, ordering: .relaxed)

        // Retained for the loop thread: taken back there, or released below if the thread never starts.
        let threadArgument = Unmanaged.passRetained(self).toOpaque()
        // libuv's thread API: one closure type on every platform (pthread_create's differs
        // between Glibc and Darwin).
        #if canImport(Darwin)
            var thread: uv_thread_t? = nil  // a pointer type there
        #else
            var thread = uv_thread_t()
        #endif
        let result = uv_thread_create(
            &thread,
            { argument in
                // Takes back the reference start() passed (retained): the thread owns the loop until it exits.
                let loop = Unmanaged<UVLoop>.fromOpaque(argument!).takeRetainedValue()
                loop.runLoopThread()
            }, threadArgument)
        if result != 0 {
            // Balances the passRetained above: the thread that would have taken it never started.
            Unmanaged<UVLoop>.fromOpaque(threadArgument).release()
            uv_close(clibuv_async_as_handle(wakeup), nil)
            uv_close(clibuv_idle_as_handle(idle), nil)
            uv_run(uvLoop, UV_RUN_DEFAULT)
            uv_loop_close(uvLoop)
            endWithoutLoopThread()
            throw LoopError(.libuv(result), operation: "uv_thread_create")
        }
        // Never joined: the thread ends on its own once the loop has shut down.
        #if canImport(Darwin)
            pthread_detach(thread!)
        #else
            pthread_detach(thread)
        #endif
        started.wait()
    }

    /// Shuts the loop down and waits until its thread has exited.
    ///
    /// Pending jobs run, sleeping tasks are woken with `CancellationError`, every timer is
    /// closed, every handle is freed in its close callback and `uv_loop_close` runs. Calling it
    /// again, or on a loop that never started, does nothing.
    /// - Throws: `LoopError.calledOnLoopThread` on the loop thread (it would wait for itself);
    ///   use `shutdown()` there.
    /// - Note: Blocks the calling thread. May be called from any thread but the loop's.
    public func syncShutdown() throws(LoopError) {
        if inLoop { throw LoopError(.calledOnLoopThread, operation: "UVLoop.syncShutdown") }
        switch requestShutdown() {
        case .loopThreadShutsDown: stopped.wait()
        case .neverStarted: finishShutdownWithoutLoopThread()
        case .alreadyShutDown: shutdownHooks.runOnce()
        }
    }

    /// Shuts the loop down (see `syncShutdown()`) and resumes when its thread has exited,
    /// without blocking a thread.
    ///
    /// - Note: May be called from any task, including one running on this loop.
    public func shutdown() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let mustWait = crossThread.withLock { state -> Bool in
                if lifecycle.load(ordering: .relaxed) == .shutDown { return false }
                state.shutdownWaiters.append(continuation)
                return true
            }
            if mustWait {
                let request = requestShutdown()
                switch request {
                case .loopThreadShutsDown: return
                case .alreadyShutDown: shutdownHooks.runOnce()
                // No loop thread will run the hooks, nor resume us.
                case .neverStarted: finishShutdownWithoutLoopThread()
                }
                let waiters = crossThread.withLock { state in
                    defer { state.shutdownWaiters = [] }
                    return state.shutdownWaiters
                }
                for waiter in waiters { waiter.resume() }
            } else {
                continuation.resume()
            }
        }
    }

    /// A failed `start()`: shut down with no loop thread (see `finishShutdownWithoutLoopThread`).
    private func endWithoutLoopThread() {
        crossThread.withLock { state in
            lifecycle.store(.shutDown, ordering: .releasing)
            state.trampolineRunning = true
        }
        finishShutdownWithoutLoopThread()
    }

    /// Shutdown of a loop with no loop thread, on the calling thread, which holds the trampoline
    /// (set with the move to `.shutDown`, under the lock): the hooks run, then the jobs enqueued
    /// before `start()` and meanwhile (tasks that preferred the loop, a registry's own
    /// shutdown), one at a time, so that no task is left waiting for a thread that will never
    /// exist, and no job runs beside the hooks.
    private func finishShutdownWithoutLoopThread() {
        shutdownHooks.runOnce()
        runShutDownTrampoline()
    }

    /// What `requestShutdown()` leaves to its caller.
    private enum ShutdownRequest {
        /// The loop thread shuts down; wait for `stopped`.
        case loopThreadShutsDown
        /// No thread ever ran: the caller holds the trampoline and finishes the shutdown.
        case neverStarted
        /// Nothing left to do but run hooks added late (they run at once anyway).
        case alreadyShutDown
    }

    /// Asks the loop thread to shut down.
    private func requestShutdown() -> ShutdownRequest {
        crossThread.withLock { state -> ShutdownRequest in
            switch lifecycle.load(ordering: .relaxed) {
            case .notStarted:
                lifecycle.store(.shutDown, ordering: .releasing)
                state.trampolineRunning = true  // held until the hooks and the queued jobs have run
                return .neverStarted
            case .starting:
                // start() is between its two halves on another thread; it raises `started`
                // only once the thread runs, so waiting for `stopped` below is safe.
                lifecycle.store(.shutdownRequestedWhileStarting, ordering: .releasing)
                return .loopThreadShutsDown
            case .running:
                lifecycle.store(.shutdownRequested, ordering: .releasing)
                wakeLoopLocked(&state)
                return .loopThreadShutsDown
            case .shutdownRequestedWhileStarting, .shutdownRequested, .shuttingDown:
                return .loopThreadShutsDown
            case .shutDown:
                return .alreadyShutDown
            }
        }
    }

    /// The number of libuv handles this loop has initialised and not yet freed in a close
    /// callback. 0 after a clean shutdown.
    ///
    /// May be called from any thread.
    public var liveHandleCount: Int { liveHandles.load(ordering: .acquiring) }

    /// What `uv_loop_close` returned at shutdown (0 means every handle and request was closed),
    /// or `nil` while the loop has not shut down.
    ///
    /// May be called from any thread.
    public var loopCloseResult: Int32? {
        let value = loopCloseStatus.load(ordering: .acquiring)
        return value == Int32.min ? nil : value
    }

    /// Where the loop is in its life (see `Lifecycle`), for tests and messages. May be called
    /// from any thread; off the loop thread it is a snapshot.
    var lifecycleState: Lifecycle { lifecycle.load(ordering: .acquiring) }

    /// Whether `start()` has succeeded (true also once the loop has shut down); see
    /// `TaskLoop.hasStarted`. May be called from any thread.
    public var hasStarted: Bool {
        switch lifecycle.load(ordering: .acquiring) {
        case .notStarted, .starting, .shutdownRequestedWhileStarting: return false
        case .running, .shutdownRequested, .shuttingDown, .shutDown: return true
        }
    }

    /// Whether the loop has shut down completely. May be called from any thread.
    public var isShutDown: Bool { lifecycle.load(ordering: .acquiring) == .shutDown }

    // MARK: - TaskLoop

    /// `uv_hrtime()`: the monotonic clock in nanoseconds. May be called from any thread.
    public var now: LoopInstant { LoopInstant(nanoseconds: uv_hrtime()) }

    /// Whether the calling thread is this loop's thread. May be called from any thread.
    public var inLoop: Bool {
        let id = loopThreadID.load(ordering: .relaxed)
        return id != 0 && id == currentThreadID()
    }

    /// Runs `work` on the loop thread; see `TaskLoop.execute`.
    ///
    /// - Throws: `LoopError.notStarted` before `start()`, `LoopError.shutDown` once shutdown
    ///   has begun.
    /// - Note: May be called from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(LoopError) {
        if inLoop {
            guard !hasBegunShutdown else { throw LoopError(.shutDown, operation: "UVLoop.execute") }
            enqueueLocal(.closure(work), priority: closurePriority)
            return
        }
        try crossThread.withLock { (state) throws(LoopError) in
            switch lifecycle.load(ordering: .relaxed) {
            case .notStarted, .starting: throw LoopError(.notStarted, operation: "UVLoop.execute")
            case .shutdownRequestedWhileStarting, .shutdownRequested, .shuttingDown, .shutDown:
                throw LoopError(.shutDown, operation: "UVLoop.execute")
            case .running:
                state.incoming.append((.closure(work), closurePriority))
                wakeLoopLocked(&state)
            }
        }
    }

    /// Creates a stopped libuv timer; see `TaskLoop.makeTimer`.
    ///
    /// - Note: Loop thread only.
    public func makeTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> any LoopTimer {
        try makeUVTimer(onFire)
    }

    /// Creates a stopped libuv timer with its concrete type, for callers that re-arm it on a
    /// hot path and want no existential dispatch.
    ///
    /// - Throws: `LoopError.calledOffLoopThread`, `.shutDown`, or a libuv error.
    /// - Note: Loop thread only.
    public func makeUVTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> UVTimer {
        try UVTimer(loop: self, onFire: onFire)
    }

    /// Registers a hook that runs on the loop thread when shutdown begins, or at once on the
    /// calling thread if it has begun; see `TaskLoop.onShutdown(_:)`.
    ///
    /// - Note: May be called from any thread.
    public func onShutdown(_ body: @escaping @Sendable () -> Void) {
        shutdownHooks.add(body)
    }

    /// Sleeps on a libuv timer until `deadline`; see `LoopClock.sleep(until:tolerance:)`.
    ///
    /// - Note: May be called from any task.
    public func sleep(until deadline: LoopInstant) async throws {
        try await SleepOperation.sleep(on: self, scheduler: sleepers, until: deadline)
    }

    // MARK: - Executor

    /// Takes a job of a task that prefers this loop and runs it on the loop thread; the job is
    /// stored as is, with no closure allocated around it. (Jobs of actors pinned to the loop
    /// arrive through `executor` instead.)
    ///
    /// - Note: Called by the runtime from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        enqueue(.taskJob(UnownedJob(job)), priority: priority)
    }

    /// Queues a job or closure from any thread: the local queue on the loop thread, the
    /// cross-thread queue elsewhere, or (after shutdown) the calling thread.
    @usableFromInline package func enqueue(_ work: LoopWork, priority: UInt8) {
        if inLoop {
            enqueueLocal(work, priority: priority)
            return
        }
        let mustRunInline = crossThread.withLock { state -> Bool in
            state.incoming.append((work, priority))
            switch lifecycle.load(ordering: .relaxed) {
            case .notStarted, .starting, .shutdownRequestedWhileStarting:
                return false  // runs when the loop thread starts
            case .running, .shutdownRequested, .shuttingDown:
                wakeLoopLocked(&state)
                return false
            case .shutDown:
                if state.trampolineRunning { return false }
                state.trampolineRunning = true
                return true
            }
        }
        if mustRunInline { runShutDownTrampoline() }
    }

    /// The loop's serial executor, for actors that pin themselves to it:
    /// `nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }`.
    /// Its jobs run on the loop thread, isolated to it.
    ///
    /// May be read from any thread.
    public var executor: any SerialExecutor { serialExecutor }

    @usableFromInline package var unownedSerialExecutor: UnownedSerialExecutor {
        serialExecutor.asUnownedSerialExecutor()
    }

    /// The loop as a task executor, for `Task(executorPreference: loop)`; such a task retains
    /// the loop.
    ///
    /// May be called from any thread.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    // MARK: - Loop thread internals

    /// Wakes the loop thread once per batch. Called with the cross-thread lock held: the lock
    /// publishes the queued work before the wake-up (libuv 1.44's `uv_async_send` starts with
    /// an unfenced read), and it keeps shutdown from closing the async handle mid-send.
    @inline(__always)
    private func wakeLoopLocked(_ state: inout CrossThreadState) {
        guard !state.wakeupPending, lifecycle.load(ordering: .relaxed).loopThreadIsAwake else { return }
        state.wakeupPending = true
        let result = uv_async_send(wakeup)
        if result < 0 { log.debug("\(self): uv_async_send failed: \(LoopError.name(ofLibuvCode: result))") }
    }

    @inline(__always)
    private func enqueueLocal(_ work: LoopWork, priority: UInt8) {
        local.append(work, priority: priority)
        if !idleRunning && !runningLocalWork {
            // An active idle handle makes libuv poll without blocking, so the work runs this turn.
            idleRunning = true
            uv_idle_start(idle, uvLoopIdleCallback)
        }
    }

    /// Runs `work` on the loop thread after the current libuv phase, in this turn's run of
    /// local work. Loop thread only.
    func runAfterTimerPhase(_ work: @escaping () -> Void) {
        enqueueLocal(.closure(work), priority: closurePriority)
    }

    /// Moves the cross-thread queue into the local one; starts shutdown when it was asked for.
    ///
    /// While batches keep arriving, the wake-up flag stays set and the loop polls the queue
    /// again on its next turn instead of being woken: producers skip `uv_async_send` (a
    /// syscall) until a drain finds the queue empty, which is when the loop may block again.
    fileprivate func drainCrossThreadQueue() {
        let found = crossThread.withLock { state -> Bool in
            if state.incoming.isEmpty {
                state.wakeupPending = false
                return false
            }
            swap(&state.incoming, &drainBuffer)
            return true
        }
        pollingCrossThread = found
        if found {
            for item in drainBuffer { local.append(item.work, priority: item.priority) }
            drainBuffer.removeAll(keepingCapacity: true)
        }
        if lifecycle.load(ordering: .acquiring) == .shutdownRequested { beginShutdown() }
    }

    /// Runs local work, highest priority first, up to one turn's budget; keeps the idle handle
    /// active (so libuv polls without blocking) while work is left or the cross-thread queue
    /// is being polled.
    fileprivate func runLocalWork() {
        runningLocalWork = true
        var budget = Self.jobsPerTurn
        while budget > 0, let work = local.popFirst() {
            work.run(on: self)
            budget &-= 1
        }
        runningLocalWork = false
        let keepTurning = !local.isEmpty || pollingCrossThread
        if keepTurning != idleRunning {
            idleRunning = keepTurning
            if keepTurning { uv_idle_start(idle, uvLoopIdleCallback) } else { uv_idle_stop(idle) }
        }
    }

    fileprivate func idleTurn() {
        if pollingCrossThread { drainCrossThreadQueue() }
        runLocalWork()
    }

    private func runLoopThread() {
        loopThreadID.store(currentThreadID(), ordering: .releasing)
        crossThread.withLock { _ in
            let next: Lifecycle = lifecycle.load(ordering: .relaxed) == .starting ? .running : .shutdownRequested
            lifecycle.store(next, ordering: .releasing)
        }
        started.raise()
        log.debug("\(self) started")
        drainCrossThreadQueue()  // work enqueued before start(), and an early shutdown request
        runLocalWork()
        if !hasBegunShutdown {
            uv_run(uvLoop, UV_RUN_DEFAULT)
        }
        finishShutdown()
    }

    /// First half of shutdown, inside a callback: stop taking work, wake sleepers, close every
    /// handle, and make `uv_run` return so `finishShutdown` can drain outside any callback.
    private func beginShutdown() {
        // Hooks first: they settle loop state (a registry cancels its runs) while the loop
        // still takes work and timers.
        shutdownHooks.runOnce()
        crossThread.withLock { _ in lifecycle.store(.shuttingDown, ordering: .releasing) }
        log.debug(
            "\(self) shutting down: \(liveHandles.load(ordering: .relaxed) - Self.ownHandleCount) handles to close")
        sleepers.cancelAll()
        uv_walk(uvLoop, uvLoopCloseForShutdown, nil)
        uv_stop(uvLoop)
    }

    /// The types of the handles libuv still has on this loop, counted: `timer ×2, tcp`. Loop
    /// thread only, before the loop's memory is freed.
    private func openHandleTypes() -> String {
        var counts: [String: Int] = [:]
        withUnsafeMutablePointer(to: &counts) { pointer in
            uv_walk(
                uvLoop,
                { handle, argument in
                    // `argument` is the dictionary above, alive for the walk.
                    let counts = argument!.assumingMemoryBound(to: [String: Int].self)
                    counts.pointee[String(cString: uv_handle_type_name(handle!.pointee.type)), default: 0] += 1
                }, pointer)
        }
        return counts.sorted { $0.key < $1.key }.map { $0.value == 1 ? $0.key : "\($0.key) ×\($0.value)" }
            .joined(separator: ", ")
    }

    /// Called by `uv_walk` for each handle at shutdown.
    // A pointer libuv hands to uv_walk, valid for the call.
    fileprivate func closeForShutdown(_ handle: UnsafeMutablePointer<uv_handle_t>) {
        if uv_is_closing(handle) != 0 { return }
        if handle == clibuv_async_as_handle(wakeup) || handle == clibuv_idle_as_handle(idle) { return }
        let owner = handle.pointee.data
        guard owner != nil else { return }
        switch handle.pointee.type {
        // Each handle's owner is of the handle's type (`UVHandle.attach`).
        case UV_TIMER: UVHandle.owner(UVTimer.self, of: owner)?.closeForShutdown()
        case UV_TCP: UVHandle.owner(TCPSocket.self, of: owner)?.closeForShutdown()
        case UV_SIGNAL: UVHandle.owner(SignalWatcher.self, of: owner)?.close()
        default: assertionFailure("BUG DETECTED: \(self) does not know how to close a \(handle.pointee.type) handle")
        }
    }

    private func finishShutdown() {
        if !hasBegunShutdown { beginShutdown() }
        // Let woken tasks finish and close callbacks run. Bounded: a task that re-enqueues
        // itself forever would otherwise keep the loop alive; it moves to the trampoline below.
        var drained = false
        for _ in 0..<10_000 {
            drainCrossThreadQueue()
            runLocalWork()
            uv_run(uvLoop, UV_RUN_NOWAIT)
            let quiet = crossThread.withLock { $0.incoming.isEmpty }
            if quiet && local.isEmpty && liveHandles.load(ordering: .relaxed) == Self.ownHandleCount {
                drained = true
                break
            }
        }
        if !drained {
            log.debug("\(self): work still enqueued after 10,000 rounds of shutting down runs on the enqueuing threads")
        }

        let waiters = crossThread.withLock { state -> [UnsafeContinuation<Void, Never>] in
            lifecycle.store(.shutDown, ordering: .releasing)
            state.trampolineRunning = true  // this thread runs what is still queued, below
            while let work = local.popFirst() { state.incoming.append((work, closurePriority)) }
            defer { state.shutdownWaiters = [] }
            return state.shutdownWaiters
        }
        uv_close(clibuv_async_as_handle(wakeup), uvLoopHandleClosed)
        uv_close(clibuv_idle_as_handle(idle), uvLoopHandleClosed)
        uv_run(uvLoop, UV_RUN_DEFAULT)
        let closeResult = uv_loop_close(uvLoop)
        loopCloseStatus.store(closeResult, ordering: .releasing)
        if closeResult == 0 {
            log.debug("\(self) shut down")
        } else {
            log.warning(
                "\(self) shut down with handles still open (uv_loop_close: \(LoopError.name(ofLibuvCode: closeResult))): \(openHandleTypes())"
            )
        }
        loopThreadID.store(0, ordering: .releasing)
        // Whoever waits for the shutdown is told first: work still queued (a task that keeps
        // re-enqueueing itself) runs below on this thread, and must not hold the shutdown up.
        stopped.raise()
        for waiter in waiters { waiter.resume() }
        runShutDownTrampoline()
    }

    /// After shutdown, runs queued jobs on the calling thread, one at a time, until none is left.
    /// The caller must have set `trampolineRunning` under the lock.
    private func runShutDownTrampoline() {
        while true {
            let batch = crossThread.withLock { state -> [(work: LoopWork, priority: UInt8)] in
                if state.incoming.isEmpty { state.trampolineRunning = false }
                defer { state.incoming = [] }
                return state.incoming
            }
            if batch.isEmpty { return }
            for item in batch { item.work.run(on: self) }
        }
    }

    /// Whether the loop still takes new handles (false once shutdown has begun). Loop thread only.
    var acceptsNewHandles: Bool { !hasBegunShutdown }

    /// Whether the loop thread has begun shutting down. Exact on the loop thread, which alone
    /// makes that transition; elsewhere a snapshot.
    @inline(__always)
    private var hasBegunShutdown: Bool { lifecycle.load(ordering: .relaxed).hasBegunShutdown }

    /// Counts a handle this loop initialised. Loop thread only.
    func handleOpened() { liveHandles.add(1, ordering: .relaxed) }

    /// Counts a handle freed in its close callback. Loop thread only.
    func handleFreed() { liveHandles.subtract(1, ordering: .releasing) }
}

private let uvLoopWakeupCallback: uv_async_cb = { handle in
    // Unretained: the wake-up handle's data is its UVLoop, which the loop thread holds retained while it runs.
    let loop = Unmanaged<UVLoop>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
    loop.drainCrossThreadQueue()
    loop.runLocalWork()
}

private let uvLoopIdleCallback: uv_idle_cb = { handle in
    // Unretained: the idle handle's data is its UVLoop, which the loop thread holds retained while it runs.
    Unmanaged<UVLoop>.fromOpaque(handle!.pointee.data).takeUnretainedValue().idleTurn()
}

private let uvLoopCloseForShutdown: uv_walk_cb = { handle, _ in
    UVHandle.loop(of: handle!.pointee.loop).closeForShutdown(handle!)
}

/// The close callback of the loop's own handles, which the loop frees itself, in deinit.
private let uvLoopHandleClosed: uv_close_cb = { handle in
    UVHandle.loop(of: handle!.pointee.loop).handleFreed()
}
