import TaskLoopCore

extension TaskRegistry {

    /// Starts shutting down: applies what was posted, cancels every waiting and running
    /// generation (phase `cancelled(.registryShutDown)`), closes every timer, and ends the
    /// phase streams once the last action has ended. Later declarations throw
    /// `RegistryError.shutDown`. Idempotent. On a `UVLoop` that has not started, declarations
    /// are refused at once and the rest happens on the loop thread when it starts (or on the
    /// thread that shuts the loop down without starting it).
    ///
    /// - Note: May be called from any thread; `shutdown()` also waits for the actions to end.
    public func startShutdown() {
        if loop.inLoop {
            applyShutdown()
            return
        }
        if !loop.hasStarted {
            // Declarations from now on are refused with `.shutDown`, even before the loop starts.
            _ = posted.close(dropping: false)
            // A loop that has not started takes jobs, not closures: this one runs on its thread
            // once it starts (or on the thread that shuts it down without starting it).
            Task(executorPreference: loop) { [self] in self.applyShutdown() }
            return
        }
        do { try loop.execute { [self] in self.applyShutdown() } } catch {
            // The loop's shutdown has begun: its hook shuts the registry down, or already has.
            core.logDebug("startShutdown: the loop takes no more work (\(error))")
        }
    }

    /// Shuts down (see `startShutdown()`) and returns once every action has ended. Awaited
    /// inside one of this registry's own runs (its action, a child task of it, or a run
    /// already cancelled that is ending), it does not wait for that run: it returns once every
    /// other action has ended. A task a run created that outlives the run waits for every
    /// action, like any caller; so does a `Task.detached` (it inherits nothing from the run:
    /// awaiting shutdown there while the run awaits that task deadlocks them). Once the
    /// loop's own shutdown has begun, the loop's shutdown hook shuts the registry down and this
    /// returns at once: await the loop's shutdown instead (`await loop.shutdown()`). On a loop
    /// that has not started, it returns at once (no action has run), like `startShutdown()`.
    ///
    /// - Complexity: O(n) in the declared tasks (each is cancelled), then it waits for the
    ///   slowest action to end: an action that ignores cancellation holds it back.
    /// - Note: May be called from any task. With a `TestLoop`, call `startShutdown()` and run
    ///   the loop instead: nothing runs on a test loop while a test awaits.
    public func shutdown() async {
        if !loop.hasStarted {
            // Nothing runs yet, so nothing to wait for: the shutdown happens when the loop starts.
            startShutdown()
            return
        }
        // Awaited inside one of this registry's own runs (its action, or a child task of it),
        // shutdown must not wait for that run: it returns once every other action has ended.
        let caller = CurrentRun.marker
        let callerIsCancelled = Task.isCancelled
        if let testLoop = loop as? TestLoop, testLoop.inLoop, !testLoop.isBeingDriven, !testLoop.hasShutDown {
            return shutDownUndriven(testLoop, caller: caller, callerIsCancelled: callerIsCancelled)
        }
        await onLoopUntilDone { [self] done in
            let awaitingRun = self.core.runAwaitingShutdown(caller, callerIsCancelled: callerIsCancelled)
            self.applyShutdown()
            self.core.whenQuiesced(awaitingRun: awaitingRun, done)
        }
    }

    /// Runs `work` on the loop (at once on its thread, else posted) and returns once `work`
    /// calls `done`. Once the loop's shutdown has begun it takes no job, and its hook shuts the
    /// registry down: that shutdown is the one to await (`await loop.shutdown()`), so this
    /// returns at once. May be called from any task.
    private func onLoopUntilDone(_ work: @escaping @Sendable (_ done: @escaping @Sendable () -> Void) -> Void) async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let job: @Sendable () -> Void = { work { continuation.resume() } }
            if loop.inLoop {
                job()
            } else {
                do { try loop.execute(job) } catch { continuation.resume() }
            }
        }
    }

    /// Whether shutdown has begun.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    public var isShutDown: Bool {
        get throws(RegistryError) {
            guard loop.inLoop else { throw .calledOffLoopThread }
            return core.isShutDown
        }
    }

    /// Starts shutting down gracefully: from now on no run starts. Declarations (and controls)
    /// are refused with `RegistryError.shutDown`, and every generation that has not started
    /// (waiting out a debounce or throttle, a previous run, a concurrency limit's queue, or a
    /// retry) ends `cancelled(.registryShutDown)` at once. Runs under way get `gracePeriod` to
    /// finish on their own: their commits land and they end `finished` (or `failed`, without
    /// retries). Once every run has ended, or when the grace period is over, whichever comes
    /// first, the shutdown completes as `startShutdown()`'s: what still runs is cancelled
    /// (`cancelled(.registryShutDown)`), every timer closes, and the phase streams end once the
    /// last action has ended. A shutdown already under way goes on as it is.
    ///
    /// - Note: May be called from any thread (on a loop that has not started, the shutdown
    ///   happens when it starts, with nothing running to wait for); `shutdown(gracePeriod:)`
    ///   also waits for the actions to end. With a `TestLoop`, call this and advance the loop.
    public func startShutdown(gracePeriod: Duration) {
        if loop.inLoop {
            applyGracefulShutdown(gracePeriod: gracePeriod)
            return
        }
        if !loop.hasStarted {
            startShutdown()
            return
        }
        do { try loop.execute { [self] in self.applyGracefulShutdown(gracePeriod: gracePeriod) } } catch {
            core.logDebug("startShutdown(gracePeriod:): the loop takes no more work (\(error))")
        }
    }

    /// Shuts down gracefully (see `startShutdown(gracePeriod:)`) and returns once every action
    /// has ended: at the latest `gracePeriod` after the call, plus the time the runs still under
    /// way then take to honour their cancellation. Awaited inside one of this registry's own runs,
    /// it does not wait for that run (as `shutdown()`).
    ///
    /// - Note: May be called from any task. With a `TestLoop`, call `startShutdown(gracePeriod:)`
    ///   and advance the loop instead.
    public func shutdown(gracePeriod: Duration) async {
        if !loop.hasStarted {
            startShutdown()
            return
        }
        let caller = CurrentRun.marker
        let callerIsCancelled = Task.isCancelled
        if let testLoop = loop as? TestLoop, testLoop.inLoop, !testLoop.isBeingDriven, !testLoop.hasShutDown {
            // Nothing can end while the awaiting test holds the loop: say so rather than hang.
            preconditionFailure(
                "BUG DETECTED: `await registry.shutdown(gracePeriod:)` on \(testLoop)'s own thread while nothing runs "
                    + "the loop: its runs could never end, so this would wait forever. Call "
                    + "`registry.startShutdown(gracePeriod:)`, then `loop.advance(by:)` until they have ended.")
        }
        await onLoopUntilDone { [self] done in
            let awaitingRun = self.core.runAwaitingShutdown(caller, callerIsCancelled: callerIsCancelled)
            self.applyGracefulShutdown(gracePeriod: gracePeriod, awaitingRun: awaitingRun)
            // Once every action has ended: after the shutdown completed (its waiter came first).
            self.core.whenQuiesced(awaitingRun: awaitingRun) { [self] in
                if self.core.shutdown.isFinal {
                    done()
                } else {
                    self.core.whenQuiesced(awaitingRun: awaitingRun, done)
                }
            }
        }
    }

    /// The first part of a graceful shutdown, on the loop thread: nothing new starts, and the
    /// shutdown completes (`applyShutdown`) when every run has ended or at the grace period's
    /// end. `awaitingRun`: the run that awaits `shutdown(gracePeriod:)` itself, not waited for.
    func applyGracefulShutdown(gracePeriod: Duration, awaitingRun: RunKey? = nil) {
        guard !core.isShutDown else { return }
        _ = posted.close(dropping: false)
        runPosted()
        core.beginShutdown()
        core.traceShutdown()
        // An observed task would declare again on the next change: its tracking ends now.
        for tracker in observations.values { tracker.stop() }
        observations = [:]
        stopFollowingAll()
        slots.forEachRecord { core.dropPending($0, reason: .registryShutDown) }
        core.whenQuiesced(awaitingRun: awaitingRun) { [self] in self.applyShutdown() }
        guard !core.shutdown.isFinal else { return }
        let clock = loop
        do {
            let timer = try loop.makeTimer { [weak self] in self?.applyShutdown() }
            // Kept before it starts: `applyShutdown` closes it, also when starting it fails.
            gracePeriodTimer = timer
            // A grace period of zero or less ends at once (at the loop's next timers).
            let grace = UInt64(max(0, gracePeriod.clampedNanoseconds))
            try timer.start(at: LoopInstant(nanoseconds: clock.now.nanoseconds &+ grace))
        } catch {
            // The loop is shutting down: its hook completes the registry's shutdown.
            applyShutdown()
        }
    }

    /// Shuts the registry down on the loop thread (`startShutdown`, `shutdown`, the loop's
    /// shutdown hook, and the end of a graceful shutdown). Loop thread only.
    func applyShutdown() {
        guard !core.shutdown.isFinal else { return }
        gracePeriodTimer?.close()
        gracePeriodTimer = nil
        if !core.isShutDown {
            _ = posted.close(dropping: false)
            runPosted()
            core.beginShutdown()
            core.traceShutdown()
        }
        core.shutdown.finish()
        for first in slots.removeAllSlots() { cancelRemovedSlot(first, reason: .registryShutDown) }
        for tracker in observations.values { tracker.stop() }
        observations = [:]
        stopFollowingAll()
        removedRunning = [:]
        core.closeTimers()
        core.whenQuiesced { [phaseStreams] in phaseStreams.finishAll() }
    }

    /// `shutdown()` awaited on a test loop's own thread while nothing drives it: no job, timer
    /// or action can run until the awaiting test returns, so an action still running would
    /// never end and the await would never return. It returns when every action has ended at
    /// once (cancelled synchronously), and otherwise stops the program with what to do instead
    /// of hanging without a word.
    private func shutDownUndriven(_ testLoop: TestLoop, caller: CurrentRun?, callerIsCancelled: Bool) {
        let awaitingRun = core.runAwaitingShutdown(caller, callerIsCancelled: callerIsCancelled)
        applyShutdown()
        var quiesced = false
        core.whenQuiesced(awaitingRun: awaitingRun) { quiesced = true }
        precondition(
            quiesced,
            "BUG DETECTED: `await registry.shutdown()` on \(testLoop)'s own thread while nothing runs the loop: its "
                + "actions can never end, so this would wait forever. Call `registry.startShutdown()`, then "
                + "`loop.run()` (or `advance(by:)`) until they have ended.")
    }
}

/// What a registry released without `shutdown()` leaves to do on its loop thread: what
/// `shutdown()` does, without the registry. Its core shuts down, every task is cancelled (each
/// stream hears its task's final phase on the run's own generation, through the phase streams
/// its core still holds; a task already over hears nothing more), every timer closes, and the
/// streams end once every action has ended.
struct RegistryRelease<Key: Hashable & Sendable>: @unchecked Sendable {
    // @unchecked Sendable: moved to the loop thread whole, and used only there (the registry
    // that owned these is gone, so nothing else touches them).
    let core: RegistryCore
    let slots: SlotTable<Key>
    let phaseStreams: PhaseStreams<Key>

    func run() {
        guard !core.isShutDown else { return }
        core.beginShutdown()
        var slots = slots
        for first in slots.removeAllSlots() {
            var next: TaskRecord<Key>? = first
            while let record = next {
                core.remove(record, reason: .registryShutDown)
                next = record.nextInBucket
                record.nextInBucket = nil
            }
            core.slotRemoved()
        }
        core.closeTimers()
        core.whenQuiesced { [phaseStreams] in phaseStreams.finishAll() }
    }
}
