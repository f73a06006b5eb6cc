import UVLoop

/// The registry's engine, independent of the key type: options, deadline queues, and the life
/// of every run (schedule, start, cancel, end). `TaskRegistry` owns the slot table and calls in.
///
/// Loop thread only, without locks: every method runs on the registry's loop thread.
@usableFromInline
final class RegistryCore: @unchecked Sendable {
    @usableFromInline let loop: any TaskLoop
    /// `loop` without reference counting, for the calls made on every change (`now`,
    /// `inLoop`): copying the existential out of `loop` retains and releases it each time.
    /// Safe because `loop` keeps the loop alive as long as this core exists.
    @usableFromInline unowned(unsafe) let unretainedLoop: any TaskLoop
    let clock: LoopClock
    /// The way onto the loop thread for actions that run on other executors.
    let door: LoopDoor
    /// The counters live behind a pointer: they change on every declaration, and as a class's
    /// stored property each `+= 1` would pay a dynamic exclusivity check.
    private let countersStorage: UnsafeMutablePointer<RegistryCounters> = {
        let storage = UnsafeMutablePointer<RegistryCounters>.allocate(capacity: 1)
        storage.initialize(to: RegistryCounters())
        return storage
    }()

    @usableFromInline var counters: RegistryCounters {
        get { countersStorage.pointee }
        _modify { yield &countersStorage.pointee }
    }
    @usableFromInline private(set) var isShutDown = false
    private var optionsTable: [TaskOptions.Values: TaskOptions] = [:]
    private var debounceQueues: [UInt64: DeadlineQueue<DebounceEntry>] = [:]
    private var progressQueues: [UInt64: DeadlineQueue<ProgressEntry>] = [:]
    private var synchronousQueues: [UInt64: DeadlineQueue<SynchronousRunEntry>] = [:]
    /// Throttle state of throttled tasks, off the record (most tasks are not throttled, and a
    /// record's size is the footprint per slot).
    @exclusivity(unchecked) private var throttles: [ObjectIdentifier: ThrottleState] = [:]
    /// The registry that owns this core, for publishing phases with their keys. Weak: a
    /// registry dropped without shutdown leaves running actions that still end here.
    weak var owner: AnyObject?
    private var quiescedWaiters: [() -> Void] = []
    /// Records whose pending run starts at the end of this turn (see `scheduleStart`).
    @exclusivity(unchecked) private var startQueue: [AnyTaskRecord] = []
    @exclusivity(unchecked) private var startingNow: [AnyTaskRecord] = []
    @exclusivity(unchecked) private var flushScheduled = false
    /// Inside `startScheduledRuns`, and whether a start was queued during it that the loop
    /// refused to schedule (it is shutting down): the pass then goes round again.
    @exclusivity(unchecked) private var isStartingRuns = false
    @exclusivity(unchecked) private var startAgainAfterPass = false

    init(loop: any TaskLoop) {
        self.loop = loop
        self.unretainedLoop = loop
        self.clock = loop.clock
        self.door = LoopDoor(loop: loop)
    }

    deinit {
        countersStorage.deinitialize(count: 1)
        countersStorage.deallocate()
    }

    // MARK: - Options

    /// The interned options object for `values`, creating its deadline queues on first use.
    @usableFromInline
    func options(for values: TaskOptions.Values) throws(LoopError) -> TaskOptions {
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
            synchronousQueue: synchronousQueue)
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

    // MARK: - Declarations

    /// Applies one declaration to `record` (new when `isNew`): SwiftUI's rule, then the policy.
    @usableFromInline
    func declare(
        _ record: AnyTaskRecord, isNew: Bool, identity: (any Hashable & Sendable)?, options: TaskOptions,
        body: RunBody
    ) {
        counters.declared &+= 1
        if !isNew && identitiesEqual(record.identity, identity) {
            counters.unchanged &+= 1
            return
        }
        record.identity = identity
        record.generation &+= 1
        record.phase = .idle  // the new generation's phase is set below, before this returns
        counters.liveGenerations &+= 1
        if record.pendingAction != nil {
            // The previous identity never started: debounced, throttled or waiting its turn.
            clearPending(record)
            counters.coalesced &+= 1
            counters.liveGenerations &-= 1
            emit(record, generation: record.generation &- 1, .cancelled(.supersededByPolicy))
        }
        record.options = options
        record.pendingAction = body
        if record.runIsCurrent && options.values.policy != .keepRunning {
            cancelCurrentRun(record, reason: .identityChanged)
        }
        if let queue = options.debounceQueue {
            let now = unretainedLoop.now.nanoseconds
            record.waitingForDebounce = true
            record.debounceDeadline = now &+ queue.delayNanoseconds
            queue.push(DebounceEntry(record: record, deadline: record.debounceDeadline))
            emit(record, generation: record.generation, .waiting)
            return
        }
        startWhenAllowed(record)
    }

    /// Starts the pending run unless throttle or the restart policy holds it back (then it
    /// waits, and whatever releases the hold calls this again).
    private func startWhenAllowed(_ record: AnyTaskRecord) {
        guard record.pendingAction != nil, !record.removed else { return }
        let options = record.options
        if options.throttleNanoseconds > 0 && record.hasRun
            && throttleHolds(record, window: options.throttleNanoseconds)
        {
            return
        }
        let mustWait: Bool
        switch options.values.policy {
        case .cancelPrevious: mustWait = false
        case .awaitPrevious: mustWait = record.endingRuns > 0
        case .keepRunning: mustWait = record.runIsCurrent || record.endingRuns > 0
        }
        if mustWait {
            record.waitingForPrevious = true
            emitWaitingOnce(record)
            return
        }
        scheduleStart(record)
    }

    /// Queues `record`'s pending run to start at the end of this loop turn. Several
    /// declarations to one slot within a turn (a burst of posted changes, a batch of
    /// identities) then start one run, for the last of them; the ones before end
    /// `cancelled(.supersededByPolicy)` and count as coalesced. Until then the phase reads
    /// `waiting` (no update is published for it: it lasts less than a turn).
    private func scheduleStart(_ record: AnyTaskRecord) {
        if record.phase.isIdle { record.phase = .waiting }
        guard !record.startScheduled else { return }
        record.startScheduled = true
        startQueue.append(record)
        guard !flushScheduled else { return }
        flushScheduled = true
        do {
            try loop.execute { [self] in self.startScheduledRuns() }
        } catch {
            // The loop is shutting down and takes no more work: start on this thread, now or,
            // when this is a synchronous action running inside a pass, right after that pass.
            if isStartingRuns { startAgainAfterPass = true } else { startScheduledRuns() }
        }
    }

    private func startScheduledRuns() {
        isStartingRuns = true
        repeat {
            startAgainAfterPass = false
            flushScheduled = false
            swap(&startQueue, &startingNow)
            for record in startingNow {
                record.startScheduled = false
                if !record.removed && record.pendingAction != nil && !record.waitingForDebounce
                    && !record.waitingForPrevious && !record.waitingForThrottle
                {
                    start(record)
                }
            }
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

    private func throttleHolds(_ record: AnyTaskRecord, window: UInt64) -> Bool {
        let state = throttleState(record)
        let readyAt = state.lastStart &+ window
        guard loop.now.nanoseconds < readyAt else { return false }
        if !record.waitingForThrottle {
            record.waitingForThrottle = true
            if state.timer == nil {
                state.timer = try? loop.makeTimer { [weak self, weak record] in
                    guard let self, let record else { return }
                    record.waitingForThrottle = false
                    self.startWhenAllowed(record)
                }
            }
            try? state.timer?.start(at: LoopInstant(nanoseconds: readyAt))
            emitWaitingOnce(record)
        }
        return true
    }

    private func start(_ record: AnyTaskRecord) {
        guard let body = record.pendingAction else { return }
        clearPending(record)
        let generation = record.generation
        counters.started &+= 1
        if record.hasRun { counters.restarted &+= 1 }
        record.hasRun = true
        record.runGeneration = generation
        record.runIsCurrent = true
        counters.runningActions &+= 1
        if record.options.throttleNanoseconds > 0 { throttleState(record).lastStart = loop.now.nanoseconds }
        emit(record, generation: generation, .running)
        switch body {
        case .task(let action):
            record.runIsSynchronous = false
            let context = TaskContext(run: record, generation: generation, id: record.identity, clock: clock)
            if let executor = record.options.values.executor.taskExecutor, executor !== loop {
                record.runningTask = startOffLoop(record, generation: generation, on: executor, context, action)
            } else {
                record.runningTask = Task(executorPreference: loop, priority: record.options.priority) {
                    var failure: (any Error)?
                    // The action is `nonisolated(nonsending)`: it runs right here, on the loop.
                    do { try await action(context) } catch { failure = error }
                    self.runEnded(record, generation: generation, failure: failure)
                }
            }
            pushProgressEntry(record, generation: generation)
        case .synchronous(let action):
            record.runIsSynchronous = true
            if let queue = record.options.synchronousQueue {
                let deadline = unretainedLoop.now.nanoseconds &+ queue.delayNanoseconds
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

    /// A run whose action runs on `executor`: the task prefers `executor`, where the action (a
    /// `nonisolated(nonsending)` function) runs with the task. The run's end is posted to the
    /// loop, and the task completes where it is, without waiting for it (awaiting it would cost
    /// a hop to the loop and one back). Once the loop has shut down, the end goes through the
    /// core's `LoopDoor` instead, whose jobs then run one at a time on the enqueuing threads.
    private func startOffLoop(
        _ record: AnyTaskRecord, generation: UInt64, on executor: any TaskExecutor, _ context: TaskContext,
        _ action: @escaping TaskAction
    ) -> Task<Void, Never> {
        Task(executorPreference: executor, priority: record.options.priority) {
            var failure: (any Error)?
            do { try await action(context) } catch { failure = error }
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
        let deadline = unretainedLoop.now.nanoseconds &+ queue.delayNanoseconds
        queue.push(ProgressEntry(record: record, generation: generation, deadline: deadline))
    }

    /// Calls a synchronous run's action, inline on the loop thread, and ends the run.
    private func runSynchronously(
        _ record: AnyTaskRecord, generation: UInt64, identity: (any Hashable & Sendable)?,
        action: SynchronousTaskAction
    ) {
        let context = TaskContext(run: record, generation: generation, id: identity, clock: clock)
        record.actionExecuting = true
        var failure: (any Error)?
        do { try action(context) } catch { failure = error }
        record.actionExecuting = false
        if record.runIsCurrent && record.runGeneration == generation {
            runEnded(record, generation: generation, failure: failure)
        } else {
            // The action cancelled its own run (a new id, a remove, shutdown): its phase was
            // settled then, and only now has the action ended.
            synchronousRunEnded()
        }
    }

    /// Counts a synchronous run's end whose phase is settled already.
    private func synchronousRunEnded() {
        counters.runningActions &-= 1
        if isShutDown && counters.runningActions == 0 { quiesced() }
    }

    private func synchronousRunDue(_ entry: SynchronousRunEntry) {
        guard entry.record.isCurrentRun(entry.generation) else { return }  // cancelled: ended then
        runSynchronously(entry.record, generation: entry.generation, identity: entry.identity, action: entry.action)
    }

    private func clearPending(_ record: AnyTaskRecord) {
        record.pendingAction = nil
        record.waitingForDebounce = false
        record.waitingForPrevious = false
        if record.waitingForThrottle { throttles[ObjectIdentifier(record)]?.timer?.stop() }
        record.waitingForThrottle = false
    }

    // MARK: - Ends

    /// Cancels the current run. A Swift task is cancelled and ends later, cooperatively; a
    /// synchronous run ends now (its action is not called, or has been called already).
    func cancelCurrentRun(_ record: AnyTaskRecord, reason: CancellationReason) {
        guard record.runIsCurrent else { return }
        record.runIsCurrent = false
        if !record.runIsSynchronous {
            record.endingRuns &+= 1
            record.runningTask?.cancel()
            record.runningTask = nil
        }
        record.showsProgress = false
        counters.cancelled &+= 1
        counters.liveGenerations &-= 1
        emit(record, generation: record.runGeneration, .cancelled(reason))
        // A synchronous run has nothing to wait for, unless its action is executing now: then
        // it ends when that action returns (`runSynchronously`).
        if record.runIsSynchronous && !record.actionExecuting { synchronousRunEnded() }
    }

    /// A run has ended (on the loop thread): its Swift task returned, or its synchronous action
    /// was called while the run was current.
    private func runEnded(_ record: AnyTaskRecord, generation: UInt64, failure: (any Error)?) {
        // Off the loop thread only after the loop shut down: the loop's remaining jobs and the
        // door's then run one at a time on the threads that enqueue them.
        assert(unretainedLoop.inLoop || isShutDown, "BUG DETECTED: a run ended off its registry's loop thread")
        counters.runningActions &-= 1
        if record.runIsCurrent && record.runGeneration == generation {
            record.runIsCurrent = false
            record.runningTask = nil
            record.showsProgress = false
            counters.liveGenerations &-= 1
            switch failure {
            case nil:
                counters.finished &+= 1
                emit(record, generation: generation, .finished)
            case is CancellationError:
                counters.cancelled &+= 1
                emit(record, generation: generation, .cancelled(isShutDown ? .registryShutDown : .actionCancelled))
            case let error?:
                counters.failed &+= 1
                emit(record, generation: generation, .failed(error))
            }
        } else {
            // A cancelled run: its phase was settled when it was cancelled, whatever it threw.
            record.endingRuns &-= 1
        }
        if record.waitingForPrevious {
            record.waitingForPrevious = false
            startWhenAllowed(record)
        }
        if isShutDown && counters.runningActions == 0 { quiesced() }
    }

    /// The slot of `record` is gone: cancel its waiting and running generations.
    func remove(_ record: AnyTaskRecord, reason: CancellationReason) {
        record.removed = true
        if record.pendingAction != nil {
            clearPending(record)
            counters.cancelled &+= 1
            counters.liveGenerations &-= 1
            emit(record, generation: record.generation, .cancelled(reason))
        }
        cancelCurrentRun(record, reason: reason)
        if let state = throttles.removeValue(forKey: ObjectIdentifier(record)) {
            state.timer?.close()
            state.timer = nil
        }
    }

    // MARK: - Deadlines

    private func debounceDue(_ entry: DebounceEntry) {
        let record = entry.record
        guard record.waitingForDebounce, record.debounceDeadline == entry.deadline, !record.removed else {
            return  // re-armed, started or removed since this entry was pushed
        }
        record.waitingForDebounce = false
        startWhenAllowed(record)
    }

    private func progressDue(_ entry: ProgressEntry) {
        let record = entry.record
        guard record.isCurrentRun(entry.generation), !record.showsProgress else { return }
        record.showsProgress = true
        emit(record, generation: entry.generation, .running)
    }

    // MARK: - Phases

    @inline(__always)
    func emit(_ record: AnyTaskRecord, generation: UInt64, _ phase: TaskPhase) {
        if generation == record.generation { record.phase = phase }
        if record.hasObservers { record.publish(generation: generation, phase: phase) }
    }

    private func emitWaitingOnce(_ record: AnyTaskRecord) {
        if case .waiting = record.phase { return }
        emit(record, generation: record.generation, .waiting)
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
    }

    /// Calls `body` once no action is running (at once if none is).
    func whenQuiesced(_ body: @escaping () -> Void) {
        if counters.runningActions == 0 { body() } else { quiescedWaiters.append(body) }
    }

    private func quiesced() {
        let waiters = quiescedWaiters
        quiescedWaiters = []
        for waiter in waiters { waiter() }
    }

    /// Timers the registry holds open (deadline queues and throttle timers), for tests.
    var openTimerCount: Int {
        debounceQueues.count + progressQueues.count + synchronousQueues.count
            + throttles.values.filter { $0.timer != nil }.count
    }
}

/// Compares two identities of unknown types: equal when of the same type and `==`.
@inline(__always)
func identitiesEqual(_ lhs: (any Hashable & Sendable)?, _ rhs: (any Hashable & Sendable)?) -> Bool {
    switch (lhs, rhs) {
    case (nil, nil): return true
    case (let lhs?, let rhs?): return isEqual(lhs, rhs)
    default: return false
    }
}

private func isEqual<Left: Hashable>(_ lhs: Left, _ rhs: any Hashable & Sendable) -> Bool {
    // Opening both sides and comparing metatypes is a pointer compare; `rhs as? Left` would go
    // through the dynamic-cast machinery (profiled at a tenth of a debounced change).
    func compare<Right: Hashable>(_ rhs: Right) -> Bool {
        guard Left.self == Right.self else { return false }
        return lhs == unsafeBitCast(rhs, to: Left.self)
    }
    return compare(rhs)
}
