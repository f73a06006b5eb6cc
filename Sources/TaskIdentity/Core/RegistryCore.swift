import TaskLoopCore

/// The registry's engine, independent of the key type: options, deadline queues, and the life
/// of every run (schedule, start, cancel, end). `TaskRegistry` owns the slot table and calls in.
///
/// Loop thread only, without locks: every method runs on the registry's loop thread.
@usableFromInline
final class RegistryCore: @unchecked Sendable {
    // @unchecked Sendable: reached from tasks on other threads through its registry and
    // records, but every method runs on the loop thread (see docs/safety.md).
    //
    // @exclusivity(unchecked) below: loop-confined state read or written on every change, and
    // never accessed across a call that could reach the same property (docs/safety.md).
    @usableFromInline let loop: any TaskLoop
    /// `loop` without reference counting, for the calls made on every change (`now`,
    /// `inLoop`): copying the existential out of `loop` retains and releases it each time.
    /// Safe because `loop` keeps the loop alive as long as this core exists.
    @usableFromInline unowned(unsafe) let unretainedLoop: any TaskLoop
    let clock: LoopClock
    /// The way onto the loop thread for actions that run on other executors.
    let door: LoopDoor
    /// Every counter of task states moves inside `TaskStateMachine`'s transitions; four count
    /// other things and move outside it: `liveSlots` (slots), `staleCommitsDropped` (commits),
    /// `identityEvaluations` and `observationCyclesStopped` (observed identity closures).
    /// Unchecked exclusivity: loop thread only, moved on every change.
    @exclusivity(unchecked) @usableFromInline var counters = RegistryCounters()
    /// Read on every declaration and every run's end: unchecked like the counters.
    @exclusivity(unchecked) @usableFromInline private(set) var isShutDown = false
    private var optionsTable: [TaskOptions.Values: TaskOptions] = [:]
    private var debounceQueues: [UInt64: DeadlineQueue<DebounceEntry>] = [:]
    private var progressQueues: [UInt64: DeadlineQueue<ProgressEntry>] = [:]
    private var synchronousQueues: [UInt64: DeadlineQueue<SynchronousRunEntry>] = [:]
    /// Throttle state of throttled tasks, off the record (most tasks are not throttled, and a
    /// record's size is the footprint per slot). Unchecked exclusivity: loop thread only.
    @exclusivity(unchecked) private var throttles: [ObjectIdentifier: ThrottleState] = [:]
    /// The errors of tasks whose phase is `failed`, off the record (failures are rare, and a
    /// record's size is the footprint per slot). An entry goes when its task's phase changes.
    /// Unchecked exclusivity: loop thread only.
    @exclusivity(unchecked) private var failures: [ObjectIdentifier: any Error] = [:]
    /// Removed records whose cancelled runs a re-declared task of the same slot and name waits
    /// for (`awaitPrevious`, `keepRunning`): each one's ends are passed on to its successor.
    /// Unchecked exclusivity: loop thread only.
    @exclusivity(unchecked) private var successors: [ObjectIdentifier: Succession] = [:]
    /// The registry that owns this core, for forgetting removed records. Weak: a registry
    /// dropped without shutdown leaves running actions that still end here.
    weak var owner: AnyObject?
    /// The trace being recorded, if any (`TaskRegistry.startTrace`). Unchecked exclusivity:
    /// loop thread only, read at every traced place and never held across a call
    /// (docs/safety.md).
    @exclusivity(unchecked) @usableFromInline var trace: TraceRecorder?
    #if Metrics
        /// The export `RegistryConfiguration.metrics` asked for, kept for the core's life.
        /// Loop thread only.
        var configuredExport: RegistryMetricsExport?
    #endif
    /// The owner's `PhaseStreams<Key>`, where records publish their phases: held here too, so
    /// that a registry released without shutdown still ends its streams the way shutdown does.
    let phaseStreams: AnyObject
    private var quiescedWaiters: [() -> Void] = []
    /// Runs of this registry that await `shutdown()` (in their action or a child task of it):
    /// shutdown returns once every other action has ended. A run awaiting it from several
    /// child tasks counts once.
    // @exclusivity(unchecked), as the counters: loop thread only.
    @exclusivity(unchecked) private var runsAwaitingShutdown: Set<RunKey> = []
    // @exclusivity(unchecked), these five: the start pass's state, loop thread only, touched
    // on every change.
    /// Records whose pending run starts at the end of this turn (see `queueStart`).
    @exclusivity(unchecked) private var startQueue: [AnyTaskRecord] = []
    /// The records the pass is starting now (swapped with `startQueue`).
    @exclusivity(unchecked) private var startingNow: [AnyTaskRecord] = []
    /// A start pass is posted to the loop for this turn.
    @exclusivity(unchecked) private var startPassScheduled = false
    /// Inside `startQueuedRuns`, and whether a start was queued during it that the loop
    /// refused to schedule (it is shutting down): the pass then goes round again.
    @exclusivity(unchecked) private var isStartingRuns = false
    @exclusivity(unchecked) private var startAgainAfterPass = false

    /// Where what would otherwise be swallowed is reported (see `LibraryLog`).
    let log: LibraryLog

    /// `log.debug`, for the registry's inlinable paths (out of line: they fail rarely).
    @usableFromInline @inline(never)
    func logDebug(_ message: String) { log.debug(message) }

    init(loop: any TaskLoop, log: LibraryLog, phaseStreams: AnyObject) {
        self.log = log
        self.phaseStreams = phaseStreams
        self.loop = loop
        self.unretainedLoop = loop
        self.clock = loop.clock
        self.door = LoopDoor(loop: loop)
    }

    // MARK: - Options

    /// The interned options object for `values`, creating its deadline queues on first use.
    @usableFromInline
    func options(for values: TaskOptions.Values, template: AnyObject? = nil) throws(LoopError) -> TaskOptions {
        if let options = optionsTable[values] { return options }
        var debounceQueue: DeadlineQueue<DebounceEntry>?
        let debounce = UInt64(values.debounce.clampedNanoseconds)
        if debounce > 0 {
            debounceQueue = try deadlineQueue(in: &debounceQueues, delay: debounce) { [unowned self] entry in
                self.debounceDue(entry)
            }
        }
        var progressQueue: DeadlineQueue<ProgressEntry>?
        if let delay = values.progressDelay.map({ UInt64($0.clampedNanoseconds) }) {
            progressQueue = try deadlineQueue(in: &progressQueues, delay: delay) { [unowned self] entry in
                self.progressDue(entry)
            }
        }
        var synchronousQueue: DeadlineQueue<SynchronousRunEntry>?
        let synchronousDelay = UInt64(values.synchronousDelay.clampedNanoseconds)
        if synchronousDelay > 0 {
            synchronousQueue = try deadlineQueue(in: &synchronousQueues, delay: synchronousDelay) {
                [unowned self] entry in
                self.synchronousRunDue(entry)
            }
        }
        let options = TaskOptions(
            values: values, debounceQueue: debounceQueue, progressQueue: progressQueue,
            synchronousQueue: synchronousQueue, template: template)
        optionsTable[values] = options
        return options
    }

    private func deadlineQueue<Entry>(
        in table: inout [UInt64: DeadlineQueue<Entry>], delay: UInt64, onDue: @escaping (Entry) -> Void
    ) throws(LoopError) -> DeadlineQueue<Entry> {
        if let queue = table[delay] { return queue }
        let queue = DeadlineQueue<Entry>(delayNanoseconds: delay)
        try queue.attach(to: loop, onDue: onDue)
        table[delay] = queue
        return queue
    }

    // MARK: - Events

    /// The gate a pending generation of `record` passes to start. The time is read only for a
    /// throttled task (reading the clock costs a system call on a real loop), unless given.
    @inline(__always)
    private func gate(_ record: AnyTaskRecord, now given: UInt64? = nil) -> TaskStateMachine.StartGate {
        let options = record.options
        var throttleReadyAt: UInt64 = 0
        var now = given ?? 0
        if options.throttleNanoseconds > 0, let state = throttles[ObjectIdentifier(record)] {
            throttleReadyAt = LoopInstant.nanoseconds(state.lastStart, plus: options.throttleNanoseconds)
            if given == nil { now = unretainedLoop.now.nanoseconds }
        }
        return TaskStateMachine.StartGate(policy: options.values.policy, throttleReadyAt: throttleReadyAt, now: now)
    }

    /// Applies one declaration to `record` (new when `isNew`): SwiftUI's rule, then the policy.
    @usableFromInline
    func declare(
        _ record: AnyTaskRecord, isNew: Bool, identity: consuming any Hashable & Sendable, options: TaskOptions,
        body: RunBody
    ) {
        guard isNew || !identitiesEqual(record.identity, identity) else {
            _ = record.state.declare(changed: false, debounce: 0, gate: .unused, counters: &counters)
            return
        }
        record.identity = identity
        record.options = options
        record.pendingAction = body
        if record.state.phase == .failed { failures[ObjectIdentifier(record)] = nil }
        let now: UInt64? = options.debounceNanoseconds > 0 ? unretainedLoop.now.nanoseconds : nil
        let effects = record.state.declare(
            changed: true, debounce: options.debounceNanoseconds, gate: gate(record, now: now),
            counters: &counters)
        trace(record, record.state.generation, .declared(identity: record.identity))
        carryOut(effects, on: record)
    }

    /// Does what an event's transition asks for, in the order `Effects` documents.
    /// `endedRun`: the generation of the run whose end (`runEnded`) these effects are, which
    /// the trace records as an end, not a cancellation.
    @inline(__always)
    private func carryOut(
        _ effects: TaskStateMachine.Effects, on record: AnyTaskRecord, endedRun: UInt64? = nil
    ) {
        if trace != nil { traceEffects(effects, on: record, endedRun: endedRun) }
        if effects.stopThrottleTimer { throttles[ObjectIdentifier(record)]?.timer?.stop() }
        if effects.cancelTask {
            record.runningTask?.cancel()
            record.runningTask = nil
        }
        if effects.dropTask { record.runningTask = nil }
        if effects.dropPendingAction { record.pendingAction = nil }
        if let change = effects.endedPending { publish(record, change) }
        if let change = effects.endedRun, change.phase != .failed { publish(record, change) }
        switch effects.next {
        case .none, .waitForPrevious:
            break
        case .waitForDebounce(let deadline):
            record.options.debounceQueue!.push(DebounceEntry(record: record, deadline: deadline))
        case .waitForThrottle(let until):
            armThrottle(record, until: until)
        case .queueStart:
            queueStart(record)
        }
        if let change = effects.waiting { publish(record, change) }
        #if TASKIDENTITY_INTERNAL_CHECKS
            checkInvariants(record)
        #endif
    }

    /// The trace's part of `carryOut`: the cancellations an event caused, and the window a
    /// generation starts waiting out.
    @inline(never)
    private func traceEffects(_ effects: TaskStateMachine.Effects, on record: AnyTaskRecord, endedRun: UInt64?) {
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
        case .none, .waitForPrevious, .queueStart:
            break
        }
    }

    /// The trace's record of a start: on the loop, or on the task's executor (a synchronous
    /// run is always on the loop, whatever the task's executor option).
    @inline(never)
    private func traceStart(_ record: AnyTaskRecord, _ generation: UInt64, _ body: RunBody) {
        var executor: String?
        if case .synchronous = body {
            executor = nil
        } else if !record.runsOnLoop(loop) {
            executor = "\(record.options.values.executor)"
        }
        trace(record, generation, .runStarted(executor: executor))
    }

    /// Queues `record`'s pending run to start at the end of this loop turn. Several
    /// declarations to one slot within a turn (a burst of posted changes, a batch of
    /// identities) then start one run, for the last of them; the ones before end
    /// `cancelled(.supersededByPolicy)` and count as coalesced. Until then the phase reads
    /// `waiting` (no update is published for it: it lasts less than a turn).
    private func queueStart(_ record: AnyTaskRecord) {
        startQueue.append(record)
        guard !startPassScheduled else { return }
        startPassScheduled = true
        do {
            try loop.execute { [self] in self.startQueuedRuns() }
        } catch {
            // The loop is shutting down and takes no more work: start on this thread, now or,
            // when this is a synchronous action running inside a pass, right after that pass.
            if isStartingRuns { startAgainAfterPass = true } else { startQueuedRuns() }
        }
    }

    /// The start pass: starts every queued record whose generation is still queued.
    private func startQueuedRuns() {
        isStartingRuns = true
        repeat {
            startAgainAfterPass = false
            startPassScheduled = false
            swap(&startQueue, &startingNow)
            for record in startingNow { start(record) }
            startingNow.removeAll(keepingCapacity: true)
        } while startAgainAfterPass
        isStartingRuns = false
    }

    private func throttleState(_ record: AnyTaskRecord) -> ThrottleState {
        if let state = throttles[ObjectIdentifier(record)] { return state }
        let state = ThrottleState()
        throttles[ObjectIdentifier(record)] = state
        return state
    }

    private func armThrottle(_ record: AnyTaskRecord, until deadline: UInt64) {
        let state = throttleState(record)
        if state.timer == nil {
            state.timer = try? loop.makeTimer { [weak self, weak record] in
                guard let self, let record else { return }
                let wasHeld = record.state.pending
                let effects = record.state.throttleDue(gate: self.gate(record, now: self.loop.now.nanoseconds))
                self.traceWindowClosed(record, wasHeld: wasHeld, effects)
                self.carryOut(effects, on: record)
            }
        }
        do {
            guard let timer = state.timer else { throw LoopError(.shutDown, operation: "makeTimer") }
            try timer.start(at: LoopInstant(nanoseconds: deadline))
        } catch {
            // Only a loop that is shutting down refuses; the registry's shutdown ends the task.
            log.debug("task '\(record.name)': throttle timer refused (\(error)); the task waits for shutdown")
        }
    }

    private func start(_ record: AnyTaskRecord) {
        let kind: TaskStateMachine.RunKind
        switch record.pendingAction {
        case .task?, .keyedTask?: kind = .task
        case .synchronous?: kind = record.options.synchronousQueue == nil ? .synchronousNow : .synchronousDelayed
        case nil: kind = .task  // nothing pending: the machine skips it
        }
        guard let generation = record.state.startAllowed(kind: kind, counters: &counters) else { return }
        let body = record.pendingAction.take()!
        if trace != nil { traceStart(record, generation, body) }
        if record.options.throttleNanoseconds > 0 { throttleState(record).lastStart = loop.now.nanoseconds }
        publish(record, TaskStateMachine.PhaseChange(generation: generation, phase: .running))
        #if TASKIDENTITY_INTERNAL_CHECKS
            checkInvariants(record)
        #endif
        switch body {
        case .task(let action):
            startTask(record, generation: generation, action)
        case .keyedTask(let action):
            startKeyedTask(record, generation: generation, action)
        case .synchronous(let action):
            if let queue = record.options.synchronousQueue {
                let deadline = LoopInstant.nanoseconds(unretainedLoop.now.nanoseconds, plus: queue.delayNanoseconds)
                queue.push(
                    SynchronousRunEntry(
                        record: record, generation: generation, deadline: deadline, action: action,
                        identity: record.identity))
                pushProgressEntry(record, generation: generation)
            } else {
                // Ends before this returns: no progress to show.
                runSynchronously(record, generation: generation, identity: record.identity, action: action)
            }
        }
    }

    /// Starts the run's Swift task, on the loop or on the task's executor, and its progress
    /// signal. Loop thread only.
    private func startTask(_ record: AnyTaskRecord, generation: UInt64, _ action: @escaping TaskAction) {
        let context = TaskContext(run: record, generation: generation, identity: record.identity)
        if let executor = record.options.values.executor.taskExecutor, executor !== loop {
            record.runningTask = startOffLoop(record, generation: generation, on: executor, context, action)
        } else {
            // The closure captures the context and the action alone (the record and the
            // generation are the context's): its capture box stays under 128 bytes, a size
            // glibc's malloc recycles from a fast bin.
            record.runningTask = RunTask(executorPreference: loop, priority: record.options.priority) {
                () async throws -> Void in
                var failure: (any Error)?
                // The action is `nonisolated(nonsending)`: it runs right here, on the loop, with
                // the run's marker bound for it and its child tasks (`shutdown()` reads it).
                do {
                    try await CurrentRun.$marker.withValue(
                        CurrentRun(record: context.run, generation: context.generation)
                    ) {
                        try await action(context)
                    }
                } catch {
                    failure = error
                }
                context.run.core.runEnded(context.run, generation: context.generation, failure: failure)
            }
        }
        pushProgressEntry(record, generation: generation)
    }

    /// `startTask` for a template's action, which takes the slot's key: on the loop, the
    /// record (which knows its key's type) makes the task.
    private func startKeyedTask(_ record: AnyTaskRecord, generation: UInt64, _ action: any KeyedTaskAction) {
        let context = TaskContext(run: record, generation: generation, identity: record.identity)
        if let executor = record.options.values.executor.taskExecutor, executor !== loop {
            record.runningTask = startOffLoop(record, generation: generation, on: executor, context) { context in
                try await context.run.callKeyed(action, context)
            }
        } else {
            record.runningTask = record.makeKeyedRunTask(action, context)
        }
        pushProgressEntry(record, generation: generation)
    }

    /// A run whose action runs on `executor`: the task prefers `executor`, where the action (a
    /// `nonisolated(nonsending)` function) runs with the task. The run's end is posted to the
    /// loop, and the task completes where it is, without waiting for it (awaiting it would cost
    /// a hop to the loop and one back). Once the loop has shut down, the end goes through the
    /// core's `LoopDoor` instead, whose jobs then run one at a time on the enqueuing threads.
    private func startOffLoop(
        _ record: AnyTaskRecord, generation: UInt64, on executor: any TaskExecutor, _ context: TaskContext,
        _ action: @escaping TaskAction
    ) -> RunTask {
        RunTask(executorPreference: executor, priority: record.options.priority) { () async throws -> Void in
            var failure: (any Error)?
            do {
                try await CurrentRun.$marker.withValue(CurrentRun(record: record, generation: generation)) {
                    try await action(context)
                }
            } catch {
                failure = error
            }
            let ending = failure
            do {
                try self.loop.execute { self.runEnded(record, generation: generation, failure: ending) }
            } catch {
                await self.door.run { self.runEnded(record, generation: generation, failure: ending) }
            }
        }
    }

    private func pushProgressEntry(_ record: AnyTaskRecord, generation: UInt64) {
        guard let queue = record.options.progressQueue else { return }
        let deadline = LoopInstant.nanoseconds(unretainedLoop.now.nanoseconds, plus: queue.delayNanoseconds)
        queue.push(ProgressEntry(record: record, generation: generation, deadline: deadline))
    }

    /// Calls a synchronous run's action, inline on the loop thread, and ends the run.
    private func runSynchronously(
        _ record: AnyTaskRecord, generation: UInt64, identity: any Hashable & Sendable,
        action: SynchronousTaskAction
    ) {
        let context = TaskContext(run: record, generation: generation, identity: identity)
        var failure: (any Error)?
        do { try action(context) } catch { failure = error }
        // If the action cancelled its own run (a new id, a remove, shutdown), its phase was
        // settled then, and the run only now stops being counted.
        runEnded(record, generation: generation, failure: failure)
    }

    private func synchronousRunDue(_ entry: SynchronousRunEntry) {
        guard entry.record.state.synchronousRunDue(generation: entry.generation) else { return }  // cancelled
        runSynchronously(entry.record, generation: entry.generation, identity: entry.identity, action: entry.action)
    }

    // MARK: - Ends

    /// `TaskRegistry.cancel`: ends the pending generation and the current run of `record`,
    /// which stays in its slot and forgets its identity.
    func cancelByCaller(_ record: AnyTaskRecord) {
        guard record.state.pending != .none || record.state.run != .none else { return }
        record.identity = ForgottenIdentity()
        carryOut(record.state.cancelByCaller(counters: &counters), on: record)
        noteQuiescence()
    }

    /// `TaskRegistry.dropPending`: ends the generation of `record` that has not started.
    func dropPending(_ record: AnyTaskRecord) {
        guard record.state.pending != .none else { return }
        record.identity = ForgottenIdentity()
        carryOut(record.state.dropPending(counters: &counters), on: record)
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
        let outcome: TaskStateMachine.Outcome
        switch failure {
        case nil: outcome = .finished
        case is CancellationError: outcome = .cancelled
        case .some(let error):
            outcome = .failed
            log.trace("task '\(record.name)' generation \(generation) failed: \(error)")
        }
        let effects = record.state.runEnded(
            generation: generation, outcome: outcome, isShutDown: isShutDown, gate: gate(record),
            counters: &counters)
        if let ended = effects.endedRun, ended.phase == .failed {
            if ended.generation == record.state.generation { failures[ObjectIdentifier(record)] = failure }
            // Published here, with its error; `carryOut` publishes the rest.
            if record.hasObservers { record.publish(generation: ended.generation, phase: .failed(failure!)) }
        }
        carryOut(effects, on: record, endedRun: generation)
        if record.state.isRemoved { removedRecordRunEnded(record) }
        // A run that awaited shutdown from an unstructured task of its own may end first.
        if isShutDown && !runsAwaitingShutdown.isEmpty {
            runsAwaitingShutdown.remove(RunKey(record: record, generation: generation))
        }
        noteQuiescence()
    }

    /// The slot of `record` is gone: cancel its waiting and running generations.
    func remove(_ record: AnyTaskRecord, reason: CancellationReason) {
        if record.state.phase == .failed { failures[ObjectIdentifier(record)] = nil }
        trace(record, record.state.generation, .removed)
        carryOut(record.state.remove(reason: reason, counters: &counters), on: record)
        if let state = throttles.removeValue(forKey: ObjectIdentifier(record)) {
            state.timer?.close()
            state.timer = nil
        }
        noteQuiescence()
    }

    /// Once shutting down, wakes the waiters of `whenQuiesced` when the last action has ended.
    @inline(__always)
    private func noteQuiescence() {
        if isShutDown && counters.runningActions == runsAwaitingShutdown.count { quiesced() }
    }

    // MARK: - Deadlines

    private func debounceDue(_ entry: DebounceEntry) {
        let record = entry.record
        let wasHeld = record.state.pending
        let effects = record.state.debounceDue(
            deadline: entry.deadline, gate: gate(record))
        traceWindowClosed(record, wasHeld: wasHeld, effects)
        carryOut(effects, on: record)
    }

    /// Records, when tracing, that the event just applied (with `effects`) took the latest
    /// generation out of the window it waited in (`wasHeld`, its pending part before the
    /// event): the machine decided, the trace reads its decision rather than repeating its
    /// rules. A throttle window that still holds is closed and armed again (`carryOut` records
    /// the new one).
    @inline(__always)
    private func traceWindowClosed(
        _ record: AnyTaskRecord, wasHeld: TaskStateMachine.Pending, _ effects: TaskStateMachine.Effects
    ) {
        guard trace != nil else { return }
        switch wasHeld {
        case .debouncing where record.state.pending != .debouncing:
            trace(record, record.state.generation, .windowClosed(.debounce))
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

    private func progressDue(_ entry: ProgressEntry) {
        let record = entry.record
        guard record.state.progressDue(generation: entry.generation) else { return }
        trace(record, entry.generation, .progressShown)
        publish(record, TaskStateMachine.PhaseChange(generation: entry.generation, phase: .running))
    }

    // MARK: - Phases

    /// The public phase of `record`.
    func phase(of record: AnyTaskRecord) -> TaskPhase {
        let phase = record.state.phase
        // The side table is looked up only for a failed task.
        return phase.taskPhase(failure: phase == .failed ? failures[ObjectIdentifier(record)] : nil)
    }

    @inline(__always)
    private func publish(_ record: AnyTaskRecord, _ change: TaskStateMachine.PhaseChange) {
        if record.hasObservers {
            record.publish(generation: change.generation, phase: change.phase.taskPhase(failure: nil))
        }
    }

    // MARK: - Shutdown

    /// Stops taking declarations and closes every timer. The caller removes every record.
    func beginShutdown() {
        isShutDown = true
    }

    /// Closes the deadline queues and throttle timers (after every record was removed).
    func closeTimers() {
        for queue in debounceQueues.values { queue.close() }
        for queue in progressQueues.values { queue.close() }
        for queue in synchronousQueues.values { queue.close() }
        debounceQueues = [:]
        progressQueues = [:]
        synchronousQueues = [:]
        optionsTable = [:]
        for state in throttles.values {
            state.timer?.close()
            state.timer = nil
        }
        throttles = [:]
        failures = [:]
    }

    /// The run of this registry that a task calling `shutdown()` belongs to, if that run is
    /// still executing its action (decided before shutdown cancels anything): `caller` is the
    /// task's `CurrentRun.marker`, `callerIsCancelled` whether the task was cancelled when it
    /// called. Its task's current run is executing. A run no longer current was cancelled: it
    /// is executing if the caller is that run or a child task of it, which its cancellation
    /// reached; a task the run created that outlived it (`Task {}` inherits the marker, not the
    /// cancellation) is not, and waits for every action like any caller. (Cancelled runs are
    /// counted by their task, not named, so this is decided from the caller's side.)
    func runAwaitingShutdown(_ caller: CurrentRun?, callerIsCancelled: Bool) -> RunKey? {
        guard let caller, caller.record.core === self else { return nil }
        let state = caller.record.state
        guard state.isCurrentRun(caller.generation) || (callerIsCancelled && state.endingRuns > 0) else { return nil }
        return RunKey(record: caller.record, generation: caller.generation)
    }

    /// Calls `body` once no action is running (at once if none is), apart from the runs that
    /// await `shutdown()` themselves: `awaitingRun` is the caller's (`runAwaitingShutdown`).
    func whenQuiesced(awaitingRun: RunKey? = nil, _ body: @escaping () -> Void) {
        if let awaitingRun { runsAwaitingShutdown.insert(awaitingRun) }
        quiescedWaiters.append(body)
        // Through `quiesced()`, so that every waiter runs and the set of runs awaiting
        // shutdown starts again empty.
        if counters.runningActions == runsAwaitingShutdown.count { quiesced() }
    }

    private func quiesced() {
        // The runs that awaited shutdown now return from it and end on their own.
        runsAwaitingShutdown = []
        let waiters = quiescedWaiters
        quiescedWaiters = []
        for waiter in waiters { waiter() }
    }

    // MARK: - A removed task's runs, awaited by its successor

    /// `record`, new in its slot, takes over the ending runs of `previous`, the removed task of
    /// the same slot and name: its `awaitPrevious` or `keepRunning` generation waits for them.
    @usableFromInline
    func inherit(_ record: AnyTaskRecord, endingRunsOf previous: AnyTaskRecord) {
        guard previous.state.endingRuns > 0 else { return }
        record.state.inheritEndingRuns(previous.state.endingRuns)
        successors[ObjectIdentifier(previous)] = Succession(predecessor: previous, successor: record)
    }

    /// One of `record`'s cancelled runs ended after its slot was removed: pass it on along the
    /// chain of successors, and forget each removed record once its runs have all ended.
    private func removedRecordRunEnded(_ record: AnyTaskRecord) {
        var current = record
        while true {
            let successor = successors.isEmpty ? nil : successors[ObjectIdentifier(current)]?.successor
            if current.state.endingRuns == 0 {
                if successor != nil { successors[ObjectIdentifier(current)] = nil }
                current.drained()
            }
            guard let successor else { return }
            carryOut(successor.state.previousRunEnded(gate: gate(successor)), on: successor)
            guard successor.state.isRemoved else { return }
            current = successor
        }
    }

    #if TASKIDENTITY_INTERNAL_CHECKS
        /// The internal-checks build checks the record's and the counters' invariants after
        /// each event.
        private func checkInvariants(_ record: AnyTaskRecord) {
            if let broken = record.state.brokenInvariant() {
                preconditionFailure("BUG DETECTED: \(broken) in \(record.state)")
            }
            precondition(
                (record.pendingAction != nil) == (record.state.pending != .none),
                "BUG DETECTED: pending action and pending stage disagree in \(record.state)")
            if let broken = counters.brokenInvariant() {
                preconditionFailure("BUG DETECTED: \(broken) in \(counters)")
            }
        }
    #endif

    /// Timers the registry holds open (deadline queues and throttle timers), for tests.
    var openTimerCount: Int {
        debounceQueues.count + progressQueues.count + synchronousQueues.count
            + throttles.values.filter { $0.timer != nil }.count
    }
}

/// The identity of a task that `cancel` or `dropPending` made forget its own: a value of a
/// type of its own, equal to no declared identity (nor to the absence of one), so that the
/// next declaration always starts a new generation.
struct ForgottenIdentity: Hashable, Sendable {}

/// Compares two identities of unknown types: equal when of the same type and `==`.
@inline(__always)
func identitiesEqual(_ lhs: any Hashable & Sendable, _ rhs: any Hashable & Sendable) -> Bool {
    isEqual(lhs, rhs)
}

private func isEqual<Left: Hashable>(_ lhs: Left, _ rhs: any Hashable & Sendable) -> Bool {
    // Opening both sides and comparing metatypes is a pointer compare; `rhs as? Left` would go
    // through the dynamic-cast machinery (profiled at a tenth of a debounced change).
    func compare<Right: Hashable>(_ rhs: Right) -> Bool {
        guard Left.self == Right.self else { return false }
        return lhs == unsafeBitCast(rhs, to: Left.self)  // bit cast to its own type: checked just above
    }
    return compare(rhs)
}

/// One run of one task record, as a set element.
struct RunKey: Hashable {
    let record: ObjectIdentifier
    let generation: UInt64

    init(record: AnyTaskRecord, generation: UInt64) {
        self.record = ObjectIdentifier(record)
        self.generation = generation
    }
}

/// A removed task whose cancelled runs a re-declared task of its slot waits for.
struct Succession {
    let predecessor: AnyTaskRecord
    let successor: AnyTaskRecord
}
