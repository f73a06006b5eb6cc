import TaskLoopCore

// What the core records in a trace, when one is recorded.
extension RegistryCore {
    /// The trace's part of `carryOut`: the cancellations an event caused, and the window a
    /// generation starts waiting out.
    @inline(never)
    func traceEffects(_ effects: TaskStateMachine.Effects, on record: AnyTaskRecord, endedRun: UInt64?) {
        // In `Effects`' order: the pending generation, then the run.
        if let change = effects.endedPending, case .cancelled(let reason) = change.phase {
            trace(record, change.generation, .cancelled(reason, ofRun: false))
        }
        if let generation = endedRun {
            // The current run's end has its phase; a cancelled run's end, none.
            trace(record, generation, .runEnded(phase: effects.endedRun?.phase))
        } else if let change = effects.endedRun, case .cancelled(let reason) = change.phase {
            trace(record, change.generation, .cancelled(reason, ofRun: true))
        }
        switch effects.next {
        case .waitForDebounce(let deadline):
            trace(record, record.state.generation, .windowOpened(.debounce, until: deadline))
        case .waitForThrottle(let until):
            trace(record, record.state.generation, .windowOpened(.throttle, until: until))
        case .none, .waitForPrevious, .queueStart, .waitForRetry:
            // A retry's window is traced where its wait is known (`armRetry`).
            break
        }
    }

    /// The trace's record of a start: on the loop, or on the task's executor (a synchronous
    /// run is always on the loop, whatever the task's executor option).
    @inline(never)
    func traceStart(_ record: AnyTaskRecord, _ generation: UInt64, _ body: RunBody) {
        var executor: String?
        if case .synchronous = body {
            executor = nil
        } else if !record.runsOnLoop(loop) {
            executor = "\(record.options.values.executor)"
        }
        trace(record, generation, .runStarted(executor: executor))
    }

    /// Records, when tracing, that the event just applied (with `effects`) took the latest
    /// generation out of the window it waited in (`wasHeld`, its pending part before the
    /// event): the machine decided, the trace reads its decision rather than repeating its
    /// rules. A throttle window that still holds is closed and armed again (`carryOut` records
    /// the new one).
    @inline(__always)
    func traceWindowClosed(
        _ record: AnyTaskRecord, wasHeld: TaskStateMachine.Pending, _ effects: TaskStateMachine.Effects
    ) {
        guard trace != nil else { return }
        switch wasHeld {
        case .debouncing where record.state.pending != .debouncing:
            trace(record, record.state.generation, .windowClosed(.debounce))
        case .retrying where record.state.pending != .retrying:
            trace(record, record.state.generation, .windowClosed(.retry))
        case .throttled:
            var rearmed = false
            if case .waitForThrottle = effects.next { rearmed = true }
            if record.state.pending != .throttled || rearmed {
                trace(record, record.state.generation, .windowClosed(.throttle))
            }
        default:
            break
        }
    }
}
