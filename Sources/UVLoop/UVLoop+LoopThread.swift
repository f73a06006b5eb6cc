import CLibUV
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

// What runs on the loop thread: the turn's jobs, the cross-thread queue, and the shutdown
// that closes every handle; the libuv callbacks that drive them.
extension UVLoop {
    // MARK: - Loop thread internals

    /// Wakes the loop thread once per batch. Called with the cross-thread lock held: the lock
    /// publishes the queued work before the wake-up (libuv 1.44's `uv_async_send` starts with
    /// an unfenced read), and it keeps shutdown from closing the async handle mid-send.
    @inline(__always)
    func wakeLoopLocked(_ state: inout CrossThreadState) {
        guard !state.wakeupPending, lifecycle.load(ordering: .relaxed).loopThreadIsAwake else { return }
        state.wakeupPending = true
        let result = uv_async_send(wakeup)
        if result < 0 { log.debug("\(self): uv_async_send failed: \(LoopError.name(ofLibuvCode: result))") }
    }

    @inline(__always)
    func enqueueLocal(_ work: LoopWork, priority: UInt8) {
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
    func drainCrossThreadQueue() {
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
    func runLocalWork() {
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

    func idleTurn() {
        if pollingCrossThread { drainCrossThreadQueue() }
        runLocalWork()
    }

    func runLoopThread() {
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
    func beginShutdown() {
        // Hooks first: they settle loop state (a registry cancels its runs) while the loop
        // still takes work and timers.
        services.shutdownHooks.runOnce()
        crossThread.withLock { _ in lifecycle.store(.shuttingDown, ordering: .releasing) }
        log.debug(
            "\(self) shutting down: \(liveHandles.load(ordering: .relaxed) - Self.ownHandleCount) handles to close")
        services.sleepers.cancelAll()
        uv_walk(uvLoop, uvLoopCloseForShutdown, nil)
        uv_stop(uvLoop)
    }

    /// The types of the handles libuv still has on this loop, counted: `timer ×2, tcp`. Loop
    /// thread only, before the loop's memory is freed.
    func openHandleTypes() -> String {
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
    func closeForShutdown(_ handle: UnsafeMutablePointer<uv_handle_t>) {
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

    func finishShutdown() {
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
    func runShutDownTrampoline() {
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
    var hasBegunShutdown: Bool { lifecycle.load(ordering: .relaxed).hasBegunShutdown }

    /// Counts a handle this loop initialised. Loop thread only.
    func handleOpened() { liveHandles.add(1, ordering: .relaxed) }

    /// Counts a handle freed in its close callback. Loop thread only.
    func handleFreed() { liveHandles.subtract(1, ordering: .releasing) }
}

let uvLoopWakeupCallback: uv_async_cb = { handle in
    // Unretained: the wake-up handle's data is its UVLoop, which the loop thread holds retained while it runs.
    let loop = Unmanaged<UVLoop>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
    loop.drainCrossThreadQueue()
    loop.runLocalWork()
}

let uvLoopIdleCallback: uv_idle_cb = { handle in
    // Unretained: the idle handle's data is its UVLoop, which the loop thread holds retained while it runs.
    Unmanaged<UVLoop>.fromOpaque(handle!.pointee.data).takeUnretainedValue().idleTurn()
}

let uvLoopCloseForShutdown: uv_walk_cb = { handle, _ in
    UVHandle.loop(of: handle!.pointee.loop).closeForShutdown(handle!)
}

/// The close callback of the loop's own handles, which the loop frees itself, in deinit.
let uvLoopHandleClosed: uv_close_cb = { handle in
    UVHandle.loop(of: handle!.pointee.loop).handleFreed()
}
