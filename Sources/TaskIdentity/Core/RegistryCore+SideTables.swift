import TaskLoopCore

// The side tables of run control (time limits, concurrency limits, retries, refreshes, shared
// runs), released as runs and pending generations end.
extension RegistryCore {
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
}
