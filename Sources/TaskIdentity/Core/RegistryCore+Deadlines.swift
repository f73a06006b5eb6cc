import TaskLoopCore

// Deadlines due: debounce windows, delayed progress signals and runs' time limits.

/// Where the time limit of a run under way lives: its list and its node there.
struct TimeLimitLink {
    let limits: TimeLimits
    let node: UInt32
}
extension RegistryCore {
    // MARK: - Deadlines

    func debounceDue(_ record: AnyTaskRecord) {
        let wasHeld = record.state.pending
        let effects = record.state.debounceDue(
            deadline: record.state.debounceDeadline, gate: gate(record))
        traceWindowClosed(record, wasHeld: wasHeld, effects)
        carryOut(effects, on: record)
    }

    /// A run's time limit passed (its node is already out of its list): the run is cancelled
    /// (`timedOut`).
    func timeLimitPassed(_ limit: TimeLimits.Limit) {
        let record = limit.record
        timeLimited[ObjectIdentifier(record)] = nil
        let effects = record.state.runTimedOut(generation: limit.generation, gate: gate(record), counters: &counters)
        carryOut(effects, on: record)
        noteQuiescence()
    }

    /// `carryOut`'s part for the side tables of time and concurrency limits: a run that ended
    /// or was cancelled drops its time limit, a pending generation that ended without starting
    /// (replaced or cancelled) takes its node out of its limit's queue, and a delayed
    /// synchronous run cancelled before its action was called gives its place back.
    @inline(never)
    func releaseSideTables(_ effects: TaskStateMachine.Effects, on record: AnyTaskRecord) {
        // A generation that ended, or was replaced, has no attempt left to make.
        if (effects.endedRun != nil || effects.endedPending != nil) && !retries.isEmpty { dropRetryState(record) }
        if let ended = effects.endedRun {
            if effects.cancelTask && !sharedRunOf.isEmpty { leaveSharedRun(record, generation: ended.generation) }
            if !refreshes.isEmpty { refreshAfterEnd(record, ended) }
            if !timeLimited.isEmpty, let link = timeLimited.removeValue(forKey: ObjectIdentifier(record)) {
                link.limits.remove(link.node)
            }
            if effects.actionNeverCalled { givePlaceBack(record, generation: ended.generation) }
        }
        if effects.endedPending != nil, !limitQueued.isEmpty,
            let link = limitQueued.removeValue(forKey: ObjectIdentifier(record))
        {
            link.queue.leave(priority: link.priority, node: link.node)
        }
    }

    func progressDue(_ entry: ProgressEntry) {
        let record = entry.record
        guard record.state.progressDue(generation: entry.generation) else { return }
        trace(record, entry.generation, .progressShown)
        publish(record, TaskStateMachine.PhaseChange(generation: entry.generation, phase: .running))
    }
}
