import TaskLoopCore

// Ends: a caller's cancel, a dropped or forced pending run, a run's end, a removal, and the phases they publish.
extension RegistryCore {
    // MARK: - Ends

    /// `TaskRegistry.cancel`: ends the pending generation and the current run of `record`,
    /// which stays in its slot and forgets its identity.
    func cancelByCaller(_ record: AnyTaskRecord) {
        if let rare = record.rare { dropRefreshState(rare) }
        guard record.state.pending != .none || record.state.run != .none else { return }
        if mayHaveRareState { discardAppended(record) }
        record.identity = ForgottenIdentity()
        carryOut(tally { record.state.cancelByCaller(counters: &$0) }, on: record)
        noteQuiescence()
    }

    /// `TaskRegistry.dropPending`: ends the generation of `record` that has not started.
    func dropPending(_ record: AnyTaskRecord, reason: CancellationReason = .pendingDropped) {
        guard record.state.pending != .none else { return }
        record.identity = ForgottenIdentity()
        carryOut(tally { record.state.dropPending(reason: reason, counters: &$0) }, on: record)
        // Under `appendInOrder`, the next identity waiting takes the dropped one's place.
        if mayHaveRareState { declareNextAppended(record) }
    }

    /// `TaskRegistry.runNow`: starts the generation of `record` waiting out its debounce or
    /// throttle window.
    func runNow(_ record: AnyTaskRecord) {
        let wasHeld = record.state.pending
        let effects = record.state.runNow(gate: gate(record))
        traceWindowClosed(record, wasHeld: wasHeld, effects)
        carryOut(effects, on: record)
    }

    /// A run has ended (on the loop thread): its Swift task returned, or its synchronous action
    /// was called.
    func runEnded(_ record: AnyTaskRecord, generation: UInt64, failure: (any Error)?) {
        // Off the loop thread only after the loop shut down: the loop's remaining jobs and the
        // door's then run one at a time on the threads that enqueue them.
        assert(unretainedLoop.inLoop || isShutDown, "BUG DETECTED: a run ended off its registry's loop thread")
        if mayHaveRareState, let shared = endingSharedRun(record, generation: generation) {
            endSharedRun(shared, failure: failure)
            return
        }
        endRun(record, generation: generation, failure: failure)
    }

    /// A shared run's task ended: the run of every slot it served ends. Out of line, and not
    /// through `runEnded` (a recursive `runEnded` kept the state machine's event from being
    /// inlined into it: 42 instructions per W1 change).
    @inline(never)
    func endSharedRun(_ shared: SharedRun, failure: (any Error)?) {
        for member in shared.members + shared.departed {
            endRun(member.record, generation: member.generation, failure: failure)
        }
    }

    /// `runEnded` for one slot's run.
    @inline(__always)
    func endRun(_ record: AnyTaskRecord, generation: UInt64, failure: (any Error)?) {
        let outcome: TaskStateMachine.Outcome
        switch failure {
        case nil: outcome = .finished
        case is CancellationError: outcome = .cancelled
        case .some(let error):
            outcome = .failed
            log.trace("task '\(record.name)' generation \(generation) failed: \(error)")
        }
        if mayHaveRareState { givePlaceBack(record, generation: generation) }
        var attempts = TaskStateMachine.Attempts.none
        // A graceful shutdown lets runs finish, but tries nothing again.
        if case .failed = outcome, mayHaveRareState, !isShutDown, let policy = record.options.retry {
            attempts = self.attempts(of: record, generation: generation, policy: policy)
        }
        let gate = gate(record)
        let isShutDown = isShutDown
        let effects = tally {
            record.state.runEnded(
                generation: generation, outcome: outcome, isShutDown: isShutDown, attempts: attempts, gate: gate,
                counters: &$0)
        }
        // The run was current until now: it ended on its own, not cancelled.
        if effects.endedRun != nil { record.noteRunEndedCurrent(generation) }
        runNotes.remove(RunKey(record: record, generation: generation))
        if let ended = effects.endedRun, ended.phase == .failed {
            if ended.generation == record.state.generation { keepFailure(failure, of: record) }
            // Published here, with its error; `carryOut` publishes the rest.
            if record.hasObservers { record.publish(generation: ended.generation, phase: .failed(failure!)) }
        }
        carryOut(effects, on: record, endedRun: generation)
        if let runHook {
            runHook.runEnded(record, generation: generation, failure: failure, phase: effects.endedRun.map(\.phase))
        }
        if record.state.isRemoved { removedRecordRunEnded(record) }
        // A run that awaited shutdown from an unstructured task of its own may end first.
        if isShutDown { shutdown.runEnded(RunKey(record: record, generation: generation)) }
        noteQuiescence()
    }

    /// The slot of `record` is gone: cancel its waiting and running generations.
    func remove(_ record: AnyTaskRecord, reason: CancellationReason) {
        if mayHaveRareState { discardAppended(record) }
        trace(record, record.state.generation, .removed)
        carryOut(tally { record.state.remove(reason: reason, counters: &$0) }, on: record)
        if let rare = record.rare {
            rare.failure = nil
            dropRefreshState(rare)
            closeTaskTimers(record)
        }
        noteQuiescence()
    }

    /// Keeps the error of `record`'s failed run for its phase. Out of line: failures are rare.
    @inline(never)
    func keepFailure(_ failure: (any Error)?, of record: AnyTaskRecord) {
        record.makeRare().failure = failure
    }

    /// Once shutting down, wakes the waiters of `whenQuiesced` when the last action has ended.
    @inline(__always)
    func noteQuiescence() {
        if isShutDown && counters.runningActions == shutdown.runsAwaitingCount { quiesced() }
    }

    // MARK: - Phases

    /// The public phase of `record`.
    func phase(of record: AnyTaskRecord) -> TaskPhase {
        let phase = record.state.phase
        // The rare state is read only for a failed task.
        return phase.taskPhase(failure: phase == .failed ? record.rare?.failure : nil)
    }

    @inline(__always)
    func publish(_ record: AnyTaskRecord, _ change: TaskStateMachine.PhaseChange) {
        if record.hasObservers {
            record.publish(generation: change.generation, phase: change.phase.taskPhase(failure: nil))
        }
    }
}
