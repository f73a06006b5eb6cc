import TaskLoopCore

/// What a record keeps beyond its state machine, made on first use: the latest stored result,
/// and the state of the rare options its runs use. Most records never make one; a record that
/// stores results (every key of `taskid serve`) makes this box (48 bytes, a 64-byte malloc
/// chunk, as the result box it replaced), and the few that use rare options make its subclass
/// `RareTaskState` instead: one allocation for both.
///
/// Loop thread only, like its record.
class TaskExtras {
    /// The latest result a current run stored, or nil while none has been.
    final var result: (any Sendable)?
    /// The generation whose run stored `result` (`awaitResult` answers a generation's own).
    final var resultGeneration: UInt64 = 0

    /// This box as the rare options' state, if it is one (a call, not a cast).
    var rare: RareTaskState? { nil }
}

/// The state of a record's rare options, in the record rather than in tables beside it: its
/// retry attempt, what its last run left for `staleAfter` and `refreshEvery`, its throttle's
/// last start, its run's time-limit node, its place in a limit's queue and the places its runs
/// hold, the shared runs its runs are in, its failure, and the task re-declared in its place.
///
/// Loop thread only, like its record.
final class RareTaskState: TaskExtras {
    /// Attempts of the generation under way (`RetryPolicy`).
    var retry: RetryState?
    /// What the last run left for `staleAfter` and `refreshEvery`.
    var refresh: RefreshState?
    /// The throttle's last start and timer.
    var throttle: ThrottleState?
    /// The generation that opened the debounce window whose bound (`maxWait`) is set, 0 for
    /// none: a bound that comes due for another window (closed since) is dropped.
    var maxWaitWindow: UInt64 = 0
    /// The time-limit node of the current run, while it runs under a `timeout:`.
    var timeLimit: TimeLimitLink?
    /// The node of the pending generation in its concurrency limit's queue, while it waits.
    var limitQueued: LimitQueueLink?
    /// The identities waiting under `appendInOrder` behind the pending generation, in order.
    var appended: [AppendedDeclaration] = []
    /// The places of a concurrency limit that this record's runs hold (the current one and
    /// cancelled ones still ending), by generation.
    var placesHeld: [(generation: UInt64, queue: LimitQueue)] = []
    /// The shared runs this record's runs are in (joined, or left and still ending), by
    /// generation.
    var sharedRuns: [(generation: UInt64, run: SharedRun)] = []
    /// The priority a waiter raised a queued generation to (`escalate`), applied to its task
    /// when it starts.
    var raisedPriority: (generation: UInt64, priority: UInt8)?
    /// The error of the run that failed, while the phase says `failed`.
    var failure: (any Error)?
    /// The task re-declared in this removed task's place, which waits for its runs to end
    /// (`awaitPrevious`, `keepRunning`): each of their ends is passed on to it.
    var successor: AnyTaskRecord?

    override var rare: RareTaskState? { self }

    /// The limit's queue whose place the run `generation` holds, taken out.
    func takePlace(of generation: UInt64) -> LimitQueue? {
        guard let index = placesHeld.firstIndex(where: { $0.generation == generation }) else { return nil }
        return placesHeld.remove(at: index).queue
    }

    /// The shared run that the run `generation` is in.
    func sharedRun(of generation: UInt64) -> SharedRun? {
        sharedRuns.first { $0.generation == generation }?.run
    }

    /// The run `generation` is no longer in a shared run.
    func leaveSharedRun(of generation: UInt64) {
        sharedRuns.removeAll { $0.generation == generation }
    }
}

extension AnyTaskRecord {
    /// The rare options' state, if any was made. Loop thread only.
    final var rare: RareTaskState? { extras?.rare }

    /// The box of the stored result, made on first use (a `RareTaskState`, if the record has
    /// one already). Loop thread only.
    final func makeExtras() -> TaskExtras {
        if let extras { return extras }
        let made = TaskExtras()
        extras = made
        return made
    }

    /// The rare options' state, made on first use (taking over the stored result, if any).
    /// Loop thread only.
    final func makeRare() -> RareTaskState {
        if let rare = extras?.rare { return rare }
        let made = RareTaskState()
        made.result = extras?.result
        made.resultGeneration = extras?.resultGeneration ?? 0
        extras = made
        return made
    }
}
