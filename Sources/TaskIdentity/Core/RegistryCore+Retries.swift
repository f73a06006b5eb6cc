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

    /// When the current run `generation` of `record`, which just failed, is tried again (loop
    /// nanoseconds), or 0 when its policy has no attempt left (or no state: it never started
    /// under a policy). Counts the next attempt.
    @inline(never)
    func retryDeadline(_ record: AnyTaskRecord, generation: UInt64, policy: RetryPolicy) -> UInt64 {
        guard let state = record.rare?.retry, state.generation == generation,
            state.attempt < policy.maxAttempts
        else { return 0 }
        state.attempt += 1
        var wait = UInt64(policy.delay(beforeAttempt: state.attempt).clampedNanoseconds)
        if policy.jitter > 0 && wait > 0 {
            // Up to `jitter` of the wait taken off, uniformly.
            let cut = Double(wait) * policy.jitter * Double.random(in: 0..<1)
            wait -= min(UInt64(cut), wait)
        }
        // Never 0: 0 means "no retry" to the state machine.
        return max(LoopInstant.nanoseconds(unretainedLoop.now.nanoseconds, plus: wait), 1)
    }

    /// `record` waits to be tried again at `deadline`: it gets its action back, and its retry
    /// timer is armed.
    func armRetry(_ record: AnyTaskRecord, until deadline: UInt64) {
        // The failed attempt's time limit goes with it: the next attempt, a run of the same
        // generation, arms its own.
        guard let rare = record.rare else { return }
        dropTimeLimit(rare)
        guard let state = rare.retry else { return }
        record.pendingAction = state.body
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
