import TaskLoopCore

// Controlling a declared task in place: cancel it, start it now, drop its pending generation.
extension TaskRegistry {

    /// Cancels the task `name` of slot `key` without removing it, like TCA's
    /// `.cancel(id:)`: a generation still waiting (debounce, throttle, a previous run) ends
    /// `cancelled(.cancelledByCaller)` without starting, and the running action is cancelled
    /// (its phase `cancelled(.cancelledByCaller)`; its later commits are dropped). The slot
    /// and the task's other state stay; the task forgets its identity, so the next
    /// declaration starts a new run even with an equal id. A task that is not declared, or
    /// has nothing waiting or running, is left alone.
    ///
    /// - Throws: as `remove(_:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    public func cancel(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try control(key, name, .cancel)
    }

    /// Starts the generation of the task that is waiting out its debounce or throttle window
    /// now, as if the window had closed ("Enter" in a search box). It still respects the
    /// restart policy: under `awaitPrevious` or `keepRunning` it waits for the previous run,
    /// and a throttled task that waits so is held by its throttle again if the window is still
    /// open when the previous run ends. A task with nothing debouncing or throttled is left
    /// alone.
    ///
    /// - Throws: as `remove(_:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once (the run starts in this loop turn's start pass).
    public func runNow(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try control(key, name, .runNow)
    }

    /// Drops the generation of the task that has not started yet (waiting out its debounce or
    /// throttle, or for a previous run) ("Escape" in a search box): it ends
    /// `cancelled(.pendingDropped)` without running. The task forgets its identity, so
    /// declaring the same id again starts it again. A task with nothing waiting is left alone.
    ///
    /// A run already under way (`keepRunning`) goes on and its commits still land, but the
    /// task's phase stays that of its latest generation, the dropped one, until the next
    /// declaration; declaring the running id again runs it once more after the current run.
    /// Read what the running run stores with `result(of:as:)` or `snapshot(of:)`.
    ///
    /// - Throws: as `remove(_:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    public func dropPending(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try control(key, name, .dropPending)
    }

    func control(_ key: Key, _ name: TaskName, _ control: TaskControl) throws(RegistryError) {
        if loop.inLoop {
            guard !core.isShutDown else { throw .shutDown }
            applyControl(key, name, control)
        } else {
            try post(.control(key, name, control), limited: true)
        }
    }

    @usableFromInline
    func applyControl(_ key: Key, _ name: TaskName, _ control: TaskControl) {
        guard let record = record(key, name) else { return }
        switch control {
        case .cancel: core.cancelByCaller(record)
        case .runNow: core.runNow(record)
        case .dropPending: core.dropPending(record)
        case .escalate(let priority): core.escalate(record, to: priority)
        }
    }
}

extension TaskRegistry {
    /// Removes every slot whose key satisfies `isRemoved`, as `remove(_:)` removes one (each
    /// task cancelled, phase `cancelled(.removed)`), and returns how many. For a server that
    /// gives up a range of keys at once (the keys of a hash slot that moved to another node).
    ///
    /// - Complexity: O(n) in the slots: `isRemoved` is called once for each key.
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread; `.shutDown` after
    ///   shutdown.
    /// - Note: Loop thread only (it reads every slot); from elsewhere, through
    ///   `ShardedTaskRegistry.removeAll(where:)` or a job on the loop.
    @discardableResult
    public func removeAll(where isRemoved: (Key) -> Bool) throws(RegistryError) -> Int {
        guard loop.inLoop else { throw .calledOffLoopThread }
        guard !core.isShutDown else { throw .shutDown }
        var removed = 0
        for key in slots.allKeys() where isRemoved(key) {
            applyRemove(key, reason: .removed)
            removed += 1
        }
        // Slots followed from a sequence that has declared nothing yet: not slots, but stopped.
        for key in identityStreams.keys where isRemoved(key) { stopFollowing(slot: key) }
        return removed
    }
}
