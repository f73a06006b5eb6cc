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

    /// `record`'s declaration, under `maxWait`, may have opened a debounce window at `openedAt`:
    /// if it did, the window's bound is queued, `maxWait` from now. Not inlined: off the path
    /// of declarations without `maxWait`.
    @inline(never)
    func boundWindow(_ record: AnyTaskRecord, options: TaskOptions, openedAt: UInt64) {
        guard record.state.debounceDeadline != 0, let queue = options.maxWaitQueue else { return }
        let window = record.state.generation
        record.makeRare().maxWaitWindow = window
        queue.push(
            MaxWaitEntry(
                record: record, window: window,
                deadline: LoopInstant.nanoseconds(openedAt, plus: options.maxWaitNanoseconds)))
    }

    /// A debounce window's bound (`maxWait`) came due: the window, if it is still the one the
    /// bound was set for and still open, closes now, as if its debounce had passed.
    func maxWaitDue(_ entry: MaxWaitEntry) {
        let record = entry.record
        guard let rare = record.rare, rare.maxWaitWindow == entry.window else { return }
        rare.maxWaitWindow = 0
        guard record.state.debounceDeadline != 0 else { return }
        debounceDue(record)
    }

    func progressDue(_ entry: ProgressEntry) {
        let record = entry.record
        guard record.state.progressDue(generation: entry.generation) else { return }
        trace(record, entry.generation, .progressShown)
        publish(record, TaskStateMachine.PhaseChange(generation: entry.generation, phase: .running))
    }
}
