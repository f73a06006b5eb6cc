extension TaskRegistry {
    /// Raises the current generation of the task `name` of slot `key` to `priority`, as Swift
    /// raises a task that a higher-priority task awaits (SE-0462): a running action's Swift
    /// task is escalated (`Task.currentPriority` reads the new priority inside it, and a
    /// `withTaskPriorityEscalationHandler` in the action hears of it); a shared run is
    /// escalated for all its slots; a generation waiting in its concurrency limit's queue moves
    /// to the lane of `priority`, after the ones already there. A priority at or below the
    /// current one does nothing, and the task's declared priority is unchanged: its next
    /// generation starts at the declared one. Unknown tasks are ignored.
    ///
    /// The registry calls it itself for what waits: `awaitResult(of:name:as:)`,
    /// `phaseUpdates(of:name:)` asked for from inside a task, and a slot joining a shared run.
    ///
    /// - Throws: as `cancel(_:name:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    public func escalate(_ key: Key, name: TaskName = .main, to priority: TaskPriority) throws(RegistryError) {
        try control(key, name, .escalate(priority.rawValue))
    }

    /// Waits for the end of the task's current generation (or, if it is idle, its next
    /// generation's) and returns the result its run stored (`commit(result:)`). Awaiting raises
    /// the generation to the caller's priority (`escalate`), and a later escalation of the
    /// caller is passed on to it (a priority escalation handler): a `.high` task awaiting a
    /// `.low` run runs it at `.high`.
    ///
    /// - Returns: the result that generation's run stored, as `Value`; nil when the task is not
    ///   declared, when the generation failed, was cancelled (a newer identity, removal,
    ///   shutdown) or stored nothing, when its result is not a `Value`, or when a newer
    ///   generation's run stored its own result before this one's was read.
    /// - Throws: `RegistryError.shutDown` when the registry has shut down before the generation
    ///   ended (or before the call); `.loopNotStarted` before the loop starts.
    /// - Note: May be called from any task.
    public func awaitResult<Value>(of key: Key, name: TaskName = .main, as type: Value.Type) async throws(RegistryError)
        -> Value?
    {
        guard loop.hasStarted else { throw .loopNotStarted }
        let updates = phaseUpdates(of: key, name: name)
        let loop = self.loop
        let ended: TaskPhaseUpdate? = await withTaskPriorityEscalationHandler {
            var target: UInt64?
            for await update in updates {
                // The first update is the task's phase now: generation 0 for no task.
                if target == nil {
                    guard update.generation > 0 else { return update }
                    target = update.phase.isIdle ? update.generation + 1 : update.generation
                }
                if let target, update.generation >= target, update.phase.isFinal { return update }
            }
            return nil  // the stream ended first: the registry shut down
        } onPriorityEscalated: { [weak self] _, raised in
            // Called on the thread that escalates this caller, which may be the loop's in the
            // middle of the core's work (this caller a run the core raises): always a job of
            // its own, never inline.
            guard let self else { return }
            try? loop.execute { try? self.escalate(key, name: name, to: raised) }
        }
        guard let ended else { throw .shutDown }
        guard ended.generation > 0, case .finished = ended.phase else { return nil }
        let stored = try await onLoop { [self] () -> (any Sendable)? in
            guard let extras = self.record(key, name)?.extras, extras.resultGeneration == ended.generation else {
                return nil
            }
            return extras.result
        }
        return stored as? Value
    }
}
