import TaskLoopCore

// Shutdown: the core stops, its timers close, and waiters hear when every action has ended.
extension RegistryCore {
    // MARK: - Shutdown

    /// Stops taking declarations. The caller then removes every record, and `closeTimers`
    /// closes the registry's timers.
    func beginShutdown() {
        shutdown.begin()
    }

    /// Closes the deadline queues and releases the ended tasks kept for the next start pass.
    /// Only after every record was removed: removal closed the tasks' own timers and took each
    /// record's nodes out of the time-limit lists and limit queues closed here.
    func closeTimers() {
        optionsTable.closeAll()
        limits.closeAll()
        withStartPass { $0.releaseEnded() }
    }

    /// The run of this registry that a task calling `shutdown()` belongs to, if that run is
    /// still executing its action (decided before shutdown cancels anything): `caller` is the
    /// task's `CurrentRun.marker`, `callerIsCancelled` whether the task was cancelled when it
    /// called. Its task's current run is executing. A run no longer current was cancelled: it
    /// is executing if the caller is that run or a child task of it, which its cancellation
    /// reached; a task the run created that outlived it (`Task {}` inherits the marker, not the
    /// cancellation) is not, and waits for every action like any caller. (Cancelled runs are
    /// counted by their task, not named, so this is decided from the caller's side.)
    func runAwaitingShutdown(_ caller: CurrentRun?, callerIsCancelled: Bool) -> RunKey? {
        guard let caller, caller.record.core === self else { return nil }
        let state = caller.record.state
        guard state.isCurrentRun(caller.generation) || (callerIsCancelled && state.endingRuns > 0) else { return nil }
        return RunKey(record: caller.record, generation: caller.generation)
    }

    /// Calls `body` once no action is running (at once if none is), apart from the runs that
    /// await `shutdown()` themselves: `awaitingRun` is the caller's (`runAwaitingShutdown`).
    func whenQuiesced(awaitingRun: RunKey? = nil, _ body: @escaping () -> Void) {
        shutdown.wait(awaitingRun: awaitingRun, body)
        // Through `quiesced()`, so that every waiter runs and the set of runs awaiting
        // shutdown starts again empty.
        if counters.runningActions == shutdown.runsAwaitingCount { quiesced() }
    }

    func quiesced() {
        for waiter in shutdown.takeWaiters() { waiter() }
    }
}
