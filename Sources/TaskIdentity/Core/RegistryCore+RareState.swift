import TaskLoopCore

// The rare state of run control (time limits, concurrency limits, retries, refreshes, shared
// runs), held in each record's `RareTaskState` and released as runs and pending generations end.
extension RegistryCore {
    /// `carryOut`'s part for the rare state: a run that ended or was cancelled drops its time
    /// limit, a pending generation that ended without starting (replaced or cancelled) takes
    /// its node out of its limit's queue, and a delayed synchronous run cancelled before its
    /// action was called gives its place back.
    @inline(never)
    func releaseRareState(_ effects: TaskStateMachine.Effects, on record: AnyTaskRecord) {
        guard let rare = record.rare else { return }
        // A generation that ended, or was replaced, has no attempt left to make.
        if effects.endedRun != nil || effects.endedPending != nil { dropRetryState(rare) }
        if let ended = effects.endedRun {
            if effects.cancelled == .sharedRun, case .cancelled(let reason) = ended.phase {
                leaveSharedRun(record, generation: ended.generation, reason: reason)
            }
            if rare.refresh != nil { refreshAfterEnd(record, ended) }
            dropTimeLimit(rare)
            if effects.actionNeverCalled {
                givePlaceBack(record, generation: ended.generation)
                // No end will come for it (`runEnded`): its deadline's note goes now.
                runNotes.remove(RunKey(record: record, generation: ended.generation))
            }
        }
        if effects.endedPending != nil, let link = rare.limitQueued {
            rare.limitQueued = nil
            link.queue.leave(link)
        }
    }

    /// The time limit of the run of `rare`'s record, if any, goes.
    func dropTimeLimit(_ rare: RareTaskState) {
        guard let link = rare.timeLimit else { return }
        rare.timeLimit = nil
        link.limits.remove(link.node)
    }

    /// Closes a task's own timer (throttle, retry, refresh), if it has one.
    func closeTaskTimer(_ timer: inout (any LoopTimer)?) {
        guard let open = timer else { return }
        open.close()
        timer = nil
        optionsTable.taskTimerClosed()
    }

    /// `record` left its slot: its own timers close (its pending generation and runs were
    /// cancelled; what they release went with them).
    func closeTaskTimers(_ record: AnyTaskRecord) {
        guard let rare = record.rare else { return }
        if let throttle = rare.throttle { closeTaskTimer(&throttle.timer) }
        if let retry = rare.retry { closeTaskTimer(&retry.timer) }
        if let refresh = rare.refresh { closeTaskTimer(&refresh.timer) }
    }
}
