import TaskLoopCore

// Declarations: the state machine asked, its effects carried out.
extension RegistryCore {
    // MARK: - Events

    /// The gate a pending generation of `record` passes to start. The time is read only for a
    /// throttled task (reading the clock costs a system call on a real loop), unless given.
    @inline(__always)
    func gate(_ record: AnyTaskRecord, now given: UInt64? = nil) -> TaskStateMachine.StartGate {
        let options = record.options
        var throttleReadyAt: UInt64 = 0
        var now = given ?? 0
        if options.throttleNanoseconds > 0, let state = record.rare?.throttle {
            throttleReadyAt = LoopInstant.nanoseconds(state.lastStart, plus: options.throttleNanoseconds)
            if given == nil { now = unretainedLoop.now.nanoseconds }
        }
        return TaskStateMachine.StartGate(policy: options.values.policy, throttleReadyAt: throttleReadyAt, now: now)
    }

    /// A declaration of the identity `record` has (SwiftUI's rule): it changes nothing, unless
    /// the outcome of its last run is stale; then it runs again.
    @usableFromInline
    func declareSame(_ record: AnyTaskRecord, options: TaskOptions, body: RunBody) {
        if mayHaveRareState && isStale(record, options) {
            adopt(options, for: record)
            beginGeneration(record, options: options, body: body)
            return
        }
        _ = tally { record.state.declare(changed: false, debounce: 0, gate: .unused, counters: &$0) }
    }

    /// A declaration of an identity `record` does not have (or its first, for a new record):
    /// a new generation, and the policy says what happens to the run in progress.
    @usableFromInline
    func declareChanged(
        _ record: AnyTaskRecord, identity: consuming any Hashable & Sendable, options: TaskOptions, body: RunBody
    ) {
        record.identity = identity
        adopt(options, for: record)
        beginGeneration(record, options: options, body: body)
    }

    /// Whether `keepRunningDropNew` drops this new identity of `record` (a run under way or a
    /// generation waiting): then counted and traced, and the task keeps its identity, options
    /// and generations. Out of line: rare. (Asked by the registry before it erases the
    /// identity: asked here, in `declareChanged`, it cost every declaration a move of the
    /// erased identity, 15 instructions.)
    @usableFromInline @inline(never)
    func dropsDeclaration(_ record: AnyTaskRecord) -> Bool {
        guard record.state.dropsNewIdentity else { return false }
        tally { record.state.dropNewIdentity(counters: &$0) }
        if trace != nil { trace(record, record.state.generation, .declarationDropped) }
        return true
    }

    /// `record` takes a declaration's `options`.
    @inline(__always)
    func adopt(_ options: TaskOptions, for record: AnyTaskRecord) {
        if record.options !== options {
            // Its window, if open, belongs to the old delay's list; a bound set under the old
            // options (`maxWait`) is not this window's from now on.
            record.options.debounceWindows?.remove(record)
            record.rare?.maxWaitWindow = 0
            record.options = options
        }
    }

    /// `record`'s identity runs again as a new generation (a refresh), with `body`.
    func declareAgain(_ record: AnyTaskRecord, body: RunBody) {
        beginGeneration(record, options: record.options, body: body)
    }

    /// A declaration's new generation of `record`, whose identity and options are set.
    @inline(__always)
    func beginGeneration(_ record: AnyTaskRecord, options: TaskOptions, body: RunBody) {
        record.pendingAction = body
        if record.state.phase == .failed { record.rare?.failure = nil }
        let now: UInt64? = options.debounceNanoseconds > 0 ? unretainedLoop.now.nanoseconds : nil
        // One test when `maxWait` is off: whether a window was open before this declaration.
        let boundsWindow = options.maxWaitNanoseconds != 0
        // Open and bounded: a window opened under options without `maxWait` gets its bound now.
        let windowWasOpen =
            boundsWindow && record.state.debounceDeadline != 0 && (record.rare?.maxWaitWindow ?? 0) != 0
        let gate = gate(record, now: now)
        let effects = tally {
            record.state.declare(changed: true, debounce: options.debounceNanoseconds, gate: gate, counters: &$0)
        }
        trace(record, record.state.generation, .declared(identity: record.identity))
        carryOut(effects, on: record)
        if boundsWindow && !windowWasOpen { boundWindow(record, options: options, openedAt: now!) }
    }

    /// Does what an event's transition asks for, in the order `Effects` documents.
    /// `endedRun`: the generation of the run whose end (`runEnded`) these effects are, which
    /// the trace records as an end, not a cancellation.
    @inline(__always)
    func carryOut(
        _ effects: TaskStateMachine.Effects, on record: AnyTaskRecord, endedRun: UInt64? = nil
    ) {
        if trace != nil { traceEffects(effects, on: record, endedRun: endedRun) }
        // One test on the common path, for all the rare state that a run's end or a pending
        // generation's end releases: separate tests make this function too large to be inlined
        // into `runEnded` (about 25 instructions a W1 change).
        if (effects.endedRun != nil || effects.endedPending != nil) && mayHaveRareState {
            releaseRareState(effects, on: record)
        }
        if effects.stopThrottleTimer { stopThrottleTimer(record) }
        // One test on W1's path; the rest out of line (a bigger test here kept this function
        // from being inlined: 43 instructions a W1 change).
        if effects.cancelled != .none {
            if effects.cancelled == .task {
                // Before the task hears of it, so that the action reads why (`RunNotes`).
                record.runWord.store(0, ordering: .releasing)
                record.runningTask?.cancel()
                record.runningTask = nil
            } else {
                noteCancelled(effects, on: record)
            }
        }
        if effects.dropTask { retireTask(record) }
        if effects.dropPendingAction { record.pendingAction = nil }
        if let change = effects.endedPending { publish(record, change) }
        if let change = effects.endedRun, change.phase != .failed { publish(record, change) }
        switch effects.next {
        case .none, .waitForPrevious:
            break
        case .waitForDebounce:
            record.options.debounceWindows!.open(record)
        case .waitForThrottle(let until):
            armThrottle(record, until: until)
        case .queueStart:
            queueStart(record)
        case .waitForRetry(let attempt):
            armRetry(record, attempt: attempt)
        }
        if let change = effects.waiting { publish(record, change) }
        #if TASKIDENTITY_INTERNAL_CHECKS
            checkInvariants(record)
        #endif
    }
}
