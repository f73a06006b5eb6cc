import TaskLoopCore

// Deadlines due: debounce windows and delayed progress signals.
extension RegistryCore {
    // MARK: - Deadlines

    func debounceDue(_ record: AnyTaskRecord) {
        let wasHeld = record.state.pending
        let effects = record.state.debounceDue(
            deadline: record.state.debounceDeadline, gate: gate(record))
        traceWindowClosed(record, wasHeld: wasHeld, effects)
        carryOut(effects, on: record)
    }

    /// A run's time limit passed: the run is cancelled (`timedOut`) if it is still current.
    func timeoutDue(_ entry: TimeoutEntry) {
        let record = entry.record
        let effects = record.state.runTimedOut(generation: entry.generation, gate: gate(record), counters: &counters)
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
