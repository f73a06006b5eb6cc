import TaskLoopCore

/// When the last run of a task with `staleAfter` or `refreshEvery` ended, the action to run
/// again, and the timer of the next refresh. In the record's rare state, as most tasks have
/// neither. Loop thread only.
final class RefreshState {
    /// The end of the task's last run, kept when it ended on its own; nil while a run is under
    /// way, or after any other end.
    var lastEnd: TaskStateMachine.RunEnd?
    var body: RunBody?
    var timer: (any LoopTimer)?
}

// Results that go stale, and refreshes: what a run's end leaves for a later declaration of the
// same identity, or for the task's own timer.
extension RegistryCore {
    /// The run `generation` of `record` starts, in a registry where some options have a retry
    /// policy, `staleAfter` or `refreshEvery`: if its own do, its action is kept to be run
    /// again.
    @inline(never)
    func noteBodyToRunAgain(_ record: AnyTaskRecord, generation: UInt64, body: RunBody) {
        let options = record.options
        if options.retry != nil { noteAttempt(record, generation: generation, body: body) }
        if options.staleAfterNanoseconds != nil || options.refreshEveryNanoseconds != nil {
            noteRefreshBody(record, body: body)
        } else if let rare = record.rare {
            dropRefreshState(rare)  // declared since without them: nothing to run again
        }
    }

    /// A run of `record`, whose options have `staleAfter` or `refreshEvery`, starts: its action
    /// is kept to be run again.
    @inline(never)
    func noteRefreshBody(_ record: AnyTaskRecord, body: RunBody) {
        let rare = record.makeRare()
        let state = rare.refresh ?? RefreshState()
        rare.refresh = state
        state.lastEnd = nil
        state.body = body
        state.timer?.stop()
    }

    /// The current run of `record` ended with `phase`: if the state machine keeps its end
    /// (see `keepsEnd`), the time is kept and the refresh timer armed; otherwise the refresh
    /// stops.
    func refreshAfterEnd(_ record: AnyTaskRecord, _ ended: TaskStateMachine.PhaseChange) {
        guard let state = record.rare?.refresh else { return }
        guard record.state.keepsEnd(of: ended, isShutDown: isShutDown) else {
            state.timer?.stop()
            state.lastEnd = nil
            return
        }
        let now = unretainedLoop.now.nanoseconds
        state.lastEnd = TaskStateMachine.RunEnd(generation: ended.generation, at: now)
        guard let every = record.options.refreshEveryNanoseconds else { return }
        armTaskTimer(&state.timer, of: record, at: LoopInstant.nanoseconds(now, plus: every), purpose: "refresh") {
            core, record in core.refreshDue(record)
        }
    }

    /// The refresh timer of `record` fired: its identity runs again, as a new generation, if
    /// the state machine says it is due.
    func refreshDue(_ record: AnyTaskRecord) {
        guard record.options.refreshEveryNanoseconds != nil, let state = record.rare?.refresh,
            let lastEnd = state.lastEnd, let body = state.body,
            record.state.refreshIsDue(lastEnd: lastEnd, isShutDown: isShutDown)
        else { return }
        declareAgain(record, body: body)
    }

    /// Whether declaring `record`'s identity again now, with `options`, runs it again: they
    /// have `staleAfter`, and the state machine finds the outcome of its last run stale.
    @inline(never)
    func isStale(_ record: AnyTaskRecord, _ options: TaskOptions) -> Bool {
        guard let staleAfter = options.staleAfterNanoseconds, let lastEnd = record.rare?.refresh?.lastEnd else {
            return false
        }
        return record.state.isStale(lastEnd: lastEnd, staleAfter: staleAfter, now: unretainedLoop.now.nanoseconds)
    }

    /// `rare`'s record leaves its slot, or forgets its identity: no refresh is left for it.
    func dropRefreshState(_ rare: RareTaskState) {
        guard let state = rare.refresh else { return }
        rare.refresh = nil
        closeTaskTimer(&state.timer)
        state.body = nil
    }
}
