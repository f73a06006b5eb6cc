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
        record.rare?.timeLimit = nil
        let gate = gate(record)
        let effects = tally { record.state.runTimedOut(generation: limit.generation, gate: gate, counters: &$0) }
        carryOut(effects, on: record)
        noteQuiescence()
    }

    func progressDue(_ entry: ProgressEntry) {
        let record = entry.record
        guard record.state.progressDue(generation: entry.generation) else { return }
        trace(record, entry.generation, .progressShown)
        publish(record, TaskStateMachine.PhaseChange(generation: entry.generation, phase: .running))
    }
}
