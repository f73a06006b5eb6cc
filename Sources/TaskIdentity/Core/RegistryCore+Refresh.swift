import TaskLoopCore

/// When the last run of a task with `staleAfter` or `refreshEvery` ended, the action to run
/// again, and the timer of the next refresh. In the record's rare state, as most tasks have
/// neither. Loop thread only.
final class RefreshState {
    /// The generation whose run ended (or is under way).
    var generation: UInt64 = 0
    /// When that run ended (loop nanoseconds), or nil while it has not.
    var endedAt: UInt64?
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
            noteRefreshBody(record, generation: generation, body: body)
        } else if let rare = record.rare {
            dropRefreshState(rare)  // declared since without them: nothing to run again
        }
    }

    /// The run `generation` of `record`, whose options have `staleAfter` or `refreshEvery`,
    /// starts: its action is kept to be run again.
    @inline(never)
    func noteRefreshBody(_ record: AnyTaskRecord, generation: UInt64, body: RunBody) {
        let rare = record.makeRare()
        let state = rare.refresh ?? RefreshState()
        rare.refresh = state
        state.generation = generation
        state.endedAt = nil
        state.body = body
        state.timer?.stop()
    }

    /// The current run of `record` ended with `phase`: after its own end (finished, failed,
    /// timed out, cancelled by its action) the time is kept and the refresh timer armed;
    /// after any other cancellation (a new identity, a removal, the caller, shutdown) the
    /// refresh stops.
    func refreshAfterEnd(_ record: AnyTaskRecord, _ ended: TaskStateMachine.PhaseChange) {
        guard let state = record.rare?.refresh else { return }
        let endedOnItsOwn: Bool
        switch ended.phase {
        case .finished, .failed, .cancelled(.timedOut), .cancelled(.actionCancelled): endedOnItsOwn = true
        default: endedOnItsOwn = false
        }
        guard endedOnItsOwn, ended.generation == record.state.generation, !isShutDown else {
            state.timer?.stop()
            state.endedAt = nil
            return
        }
        let now = unretainedLoop.now.nanoseconds
        state.generation = ended.generation
        state.endedAt = now
        guard let every = record.options.refreshEveryNanoseconds else { return }
        armTaskTimer(&state.timer, of: record, at: LoopInstant.nanoseconds(now, plus: every), purpose: "refresh") {
            core, record in core.refreshDue(record)
        }
    }

    /// The refresh timer of `record` fired: its identity runs again, as a new generation, if
    /// nothing happened to the task since its last run ended.
    func refreshDue(_ record: AnyTaskRecord) {
        guard !isShutDown, record.options.refreshEveryNanoseconds != nil,
            let state = record.rare?.refresh,
            state.endedAt != nil,
            let body = state.body, !record.state.isRemoved, record.state.pending == .none, record.state.run == nil,
            record.state.generation == state.generation
        else { return }
        declareAgain(record, body: body)
    }

    /// Whether declaring `record`'s identity again now, with `options`, runs it again: they
    /// have `staleAfter`, its last run ended at least that long ago, and nothing is pending or
    /// running.
    @inline(never)
    func isStale(_ record: AnyTaskRecord, _ options: TaskOptions) -> Bool {
        guard let staleAfter = options.staleAfterNanoseconds, let state = record.rare?.refresh,
            let endedAt = state.endedAt,
            record.state.generation == state.generation, record.state.pending == .none, record.state.run == nil
        else { return false }
        return unretainedLoop.now.nanoseconds &- endedAt >= staleAfter
    }

    /// `rare`'s record leaves its slot, or forgets its identity: no refresh is left for it.
    func dropRefreshState(_ rare: RareTaskState) {
        guard let state = rare.refresh else { return }
        rare.refresh = nil
        closeTaskTimer(&state.timer)
        state.body = nil
    }
}
