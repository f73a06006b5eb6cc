import TaskLoopCore

/// The retry bookkeeping of one task whose options have a `RetryPolicy`: the generation it
/// counts attempts of, the attempt under way or next, the action to call again, and the timer
/// of the wait. In the record's rare state, as most tasks never retry. Loop thread only.
final class RetryState {
    var generation: UInt64 = 0
    /// The attempt of the run under way (1 for the first), or of the one it waits to start.
    var attempt = 1
    /// The action of `generation`, kept from its first start to be called again.
    var body: RunBody?
    var timer: (any LoopTimer)?
}

// Retries: counting attempts, the wait after a failure, and the attempt's start.
extension RegistryCore {
    /// The run `generation` of `record`, whose options have a retry policy, starts: a new
    /// generation's first attempt, or the attempt its failure counted; its action is kept for
    /// the next one. Apart from the hot path: most tasks have no policy.
    @inline(never)
    func noteAttempt(_ record: AnyTaskRecord, generation: UInt64, body: RunBody) {
        let rare = record.makeRare()
        let state = rare.retry ?? RetryState()
        rare.retry = state
        if state.generation != generation {
            state.generation = generation
            state.attempt = 1
        }
        state.body = body
    }

    /// The attempt number of the run `generation` of `record` about to start (1 when it has
    /// no retry state for that generation).
    func attempt(of record: AnyTaskRecord, generation: UInt64) -> Int {
        guard let state = record.rare?.retry, state.generation == generation else { return 1 }
        return state.attempt
    }

    /// The attempts of the run `generation` of `record`, which just failed under `policy`, for
    /// the state machine to decide whether it is tried again (none when the run never started
    /// under a policy).
    @inline(never)
    func attempts(
        of record: AnyTaskRecord, generation: UInt64, policy: RetryPolicy
    ) -> TaskStateMachine.Attempts {
        guard let state = record.rare?.retry, state.generation == generation else { return .none }
        return TaskStateMachine.Attempts(made: state.attempt, allowed: policy.maxAttempts)
    }

    /// `record` waits to be tried again, as its `attempt`: it gets its action back, and its
    /// retry timer is armed for the policy's wait before that attempt.
    func armRetry(_ record: AnyTaskRecord, attempt: Int) {
        // The failed attempt's time limit goes with it: the next attempt, a run of the same
        // generation, arms its own.
        guard let rare = record.rare else { return }
        dropTimeLimit(rare)
        guard let state = rare.retry, let policy = record.options.retry else { return }
        state.attempt = attempt
        record.pendingAction = state.body
        var wait = UInt64(policy.delay(beforeAttempt: attempt).clampedNanoseconds)
        if policy.jitter > 0 && wait > 0 {
            // Up to `jitter` of the wait taken off, uniformly.
            let cut = Double(wait) * policy.jitter * Double.random(in: 0..<1)
            wait -= min(UInt64(cut), wait)
        }
        let deadline = LoopInstant.nanoseconds(unretainedLoop.now.nanoseconds, plus: wait)
        if trace != nil { trace(record, record.state.generation, .windowOpened(.retry, until: deadline)) }
        armTaskTimer(&state.timer, of: record, at: deadline, purpose: "retry") { core, record in
            let wasHeld = record.state.pending
            let effects = record.state.retryDue(gate: core.gate(record, now: core.loop.now.nanoseconds))
            core.traceWindowClosed(record, wasHeld: wasHeld, effects)
            core.carryOut(effects, on: record)
        }
    }

    /// The retry state of `rare`'s record goes (its generation ended, or a new one began), with
    /// its timer.
    func dropRetryState(_ rare: RareTaskState) {
        guard let state = rare.retry else { return }
        rare.retry = nil
        closeTaskTimer(&state.timer)
        state.body = nil
    }
}
