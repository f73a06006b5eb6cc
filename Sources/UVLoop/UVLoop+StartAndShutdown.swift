import CLibUV
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// Starting the loop's thread, and shutting it down from any thread.
extension UVLoop {
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
        case .alreadyShutDown: services.shutdownHooks.runOnce()
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
                case .alreadyShutDown: services.shutdownHooks.runOnce()
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
    func endWithoutLoopThread() {
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
    func finishShutdownWithoutLoopThread() {
        services.shutdownHooks.runOnce()
        runShutDownTrampoline()
    }

    /// What `requestShutdown()` leaves to its caller.
    enum ShutdownRequest {
        /// The loop thread shuts down; wait for `stopped`.
        case loopThreadShutsDown
        /// No thread ever ran: the caller holds the trampoline and finishes the shutdown.
        case neverStarted
        /// Nothing left to do but run hooks added late (they run at once anyway).
        case alreadyShutDown
    }

    /// Asks the loop thread to shut down.
    func requestShutdown() -> ShutdownRequest {
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
}
