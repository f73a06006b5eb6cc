import TaskLoopCore

// The decisions of run control that the core used to take beside the machine: whether an
// outcome is stale, whether a run's end starts a refresh, whether a generation waits for its
// concurrency limit, and (in `runEnded`) whether a failure is tried again. The core gathers
// their inputs (a time, a queue's occupancy, a policy's attempts) and carries out the answer;
// the rules are here, beside the stage they read, and in the state-machine table.
extension TaskStateMachine {
    /// The end of a run, as the core keeps it for a task with `staleAfter` or `refreshEvery`.
    struct RunEnd: Equatable {
        /// The generation whose run ended.
        let generation: UInt64
        /// When it ended (loop nanoseconds).
        let at: UInt64
    }

    /// The attempts of a failed run's generation, for `runEnded` to decide whether it is
    /// tried again.
    struct Attempts: Equatable {
        /// The attempt that just failed (1 for the generation's first run).
        var made: Int
        /// Its `RetryPolicy`'s `maxAttempts`.
        var allowed: Int

        /// No retry policy, or no attempts counted for the generation that failed.
        static let none = Attempts(made: 0, allowed: 0)
    }

    /// A concurrency limit as the start pass finds it, for `startAtLimit`.
    struct LimitOccupancy: Equatable {
        /// Every place of the limit is taken.
        var isFull: Bool
        /// Generations already wait in the limit's queue (they go first).
        var othersWait: Bool
    }

    /// What `startAtLimit` decided for a generation the start pass reached.
    enum LimitStep {
        /// A place is free and no one waits: start it (`startAllowed`).
        case start
        /// It waits in the limit's queue, phase `waiting`, until `admitted`: join the queue,
        /// then carry out the effects.
        case waitInQueue(Effects)
        /// The queued generation has moved on (superseded, removed): nothing starts.
        case movedOn
    }

    // MARK: - Decisions

    /// The start pass reached this record, whose options have a concurrency limit. With a
    /// place free and no one waiting it starts; otherwise the queued generation waits in the
    /// limit's queue (queued first come, first served, so that a newcomer never overtakes).
    mutating func startAtLimit(_ limit: LimitOccupancy, counters: inout RegistryCounters) -> LimitStep {
        check(inStartQueue, "startAtLimit")
        guard case .waiting(.startQueued) = stage else {
            inStartQueue = false
            return .movedOn
        }
        guard limit.isFull || limit.othersWait else { return .start }
        inStartQueue = false
        stage = .waiting(.startLimited)
        counters.queued &+= 1
        counters.queueLength &+= 1
        var effects = Effects()
        publishWaitingOnce(into: &effects)
        return .waitInQueue(effects)
    }

    /// The identity the task has is declared again (SwiftUI's rule: nothing changes), with
    /// `staleAfter` (nanoseconds): whether the outcome of its last run, which ended at
    /// `lastEnd`, is stale by `now`, so that the identity runs again as a new generation.
    /// Only the latest generation's run counts, once it has ended and while nothing is pending.
    func isStale(lastEnd: RunEnd, staleAfter: UInt64, now: UInt64) -> Bool {
        endedLast(lastEnd.generation) && now &- lastEnd.at >= staleAfter
    }

    /// The run `ended` just ended or was cancelled: whether its end is kept, for `staleAfter`
    /// and `refreshEvery`. It is when the run ended on its own (finished, failed, timed out,
    /// or cancelled by its own action) as the latest generation, before shutdown. Any other
    /// cancellation (a new identity, a removal, the caller, shutdown) stops the refresh.
    func keepsEnd(of ended: PhaseChange, isShutDown: Bool) -> Bool {
        guard endedLast(ended.generation), !isShutDown else { return false }
        switch ended.phase {
        case .finished, .failed, .cancelled(.timedOut), .cancelled(.actionCancelled): return true
        default: return false
        }
    }

    /// The refresh timer fired (`refreshEvery`): whether the identity whose run ended at
    /// `lastEnd` runs again now, as a new generation. It does if nothing happened to the task
    /// since: no new identity, nothing pending or running, not removed, not shutting down.
    func refreshIsDue(lastEnd: RunEnd, isShutDown: Bool) -> Bool {
        !isShutDown && endedLast(lastEnd.generation)
    }

    /// The latest generation is `generation`, and its run has ended with nothing pending.
    private func endedLast(_ ended: UInt64) -> Bool {
        switch stage {
        case .quiet: return generation == ended
        case .waiting, .running, .heldBesideRun, .removed: return false
        }
    }

    /// Whether a new identity declared under `keepRunningDropNew` is dropped: while a run is
    /// under way (or still current though cancelled by its own action) or a generation waits,
    /// in any stage but `quiet`.
    var dropsNewIdentity: Bool {
        switch stage {
        case .quiet, .removed: return false
        case .waiting, .running, .heldBesideRun: return true
        }
    }

    /// A declaration of a new identity dropped (`dropsNewIdentity`): counted, nothing else.
    mutating func dropNewIdentity(counters: inout RegistryCounters) {
        if case .removed = stage { impossible("dropNewIdentity") }
        counters.declared &+= 1
        counters.dropped &+= 1
    }
}
