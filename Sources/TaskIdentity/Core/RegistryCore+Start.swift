import TaskLoopCore

// Starting runs: the start pass at the end of a turn, throttles, the run's Swift task (on the loop, for a template, or off the loop), synchronous runs.
extension RegistryCore {
    /// Queues `record`'s pending run to start at the end of this loop turn. Several
    /// declarations to one slot within a turn (a burst of posted changes, a batch of
    /// identities) then start one run, for the last of them; the ones before end
    /// `cancelled(.supersededByPolicy)` and count as coalesced. Until then the phase reads
    /// `waiting` (no update is published for it: it lasts less than a turn).
    func queueStart(_ record: AnyTaskRecord) {
        withStartPass { $0.queue(record) }
        scheduleStartPass()
    }

    /// The handle of `record`'s run, which just ended, is kept by the start pass instead of
    /// being released, so that its task's memory is freed one task before a new one is made
    /// (`StartPass.keepEnded`).
    @inline(__always)
    func retireTask(_ record: AnyTaskRecord) {
        if let task = record.runningTask.take() { withStartPass { $0.keepEnded(task) } }
    }

    /// Posts the start pass for the end of this turn, unless it is posted already.
    func scheduleStartPass() {
        guard withStartPass({ $0.post() }) else { return }
        do {
            try loop.execute { [self] in self.startQueuedRuns() }
        } catch {
            // The loop is shutting down and takes no more work: start on this thread, now or,
            // when this is a synchronous action running inside a pass, right after that pass.
            if startPass.isRunning { withStartPass { $0.runAgain() } } else { startQueuedRuns() }
        }
    }

    /// The start pass: starts every queued record whose generation is still queued, then the
    /// heads of the concurrency limits' queues that have a free place.
    func startQueuedRuns() {
        withStartPass { $0.begin() }
        repeat {
            withStartPass { $0.beginRound() }
            while let record = withStartPass({ $0.nextToStart() }) { start(record) }
            if limits.hasAdmissionsDue { admitFromQueues() }
        } while withStartPass({ $0.endRound() })
    }

    func throttleState(_ record: AnyTaskRecord) -> ThrottleState {
        let rare = record.makeRare()
        if let state = rare.throttle { return state }
        let state = ThrottleState()
        rare.throttle = state
        return state
    }

    /// Stops the throttle timer of `record`. Out of line: throttles are rare, and `carryOut`
    /// must stay small enough to be inlined into its callers.
    @inline(never)
    func stopThrottleTimer(_ record: AnyTaskRecord) {
        record.rare?.throttle?.timer?.stop()
    }

    func armThrottle(_ record: AnyTaskRecord, until deadline: UInt64) {
        let state = throttleState(record)
        armTaskTimer(&state.timer, of: record, at: deadline, purpose: "throttle") { core, record in
            let wasHeld = record.state.pending
            let effects = record.state.throttleDue(gate: core.gate(record, now: core.loop.now.nanoseconds))
            core.traceWindowClosed(record, wasHeld: wasHeld, effects)
            core.carryOut(effects, on: record)
        }
    }

    /// Starts a task's own timer (`timer`, made on first use to call `onFire` with the core and
    /// the record, neither retained) for `deadline`. A loop that refuses is shutting down: the
    /// registry's shutdown ends the task, so the refusal is only logged.
    func armTaskTimer(
        _ timer: inout (any LoopTimer)?, of record: AnyTaskRecord, at deadline: UInt64, purpose: String,
        onFire: @escaping (RegistryCore, AnyTaskRecord) -> Void
    ) {
        if timer == nil {
            timer = try? loop.makeTimer { [weak self, weak record] in
                guard let self, let record else { return }
                onFire(self, record)
            }
            if timer != nil { optionsTable.taskTimerOpened() }
        }
        do {
            guard let timer else { throw LoopError(.shutDown, operation: "makeTimer") }
            try timer.start(at: LoopInstant(nanoseconds: deadline))
        } catch {
            log.debug("task '\(record.name)': \(purpose) timer refused (\(error)); the task waits for shutdown")
        }
    }

    /// Starts the queued generation of `record`, unless it has moved on or must wait in its
    /// concurrency limit's queue; `admitted` when it comes from the head of that queue.
    func start(_ record: AnyTaskRecord, admitted: Bool = false) {
        // A slot that joins a shared run calls no action: it takes no place of a limit. (Looked
        // up only under a limit, and again when it joins: a run carried through this function
        // cost W1 about 10 instructions a change.)
        let limitQueue = record.options.limitQueue
        let joinsSharedRun = limitQueue != nil && record.options.values.sharesRuns && sharedRunToJoin(record) != nil
        if let queue = limitQueue, !admitted, !joinsSharedRun, waitsForLimit(record, queue) { return }
        let kind: TaskStateMachine.ActiveKind
        switch record.pendingAction {
        case .task?, .keyedTask?: kind = .task  // a shared run says so when it starts (`runIsShared`)
        case .synchronous?: kind = record.options.synchronousQueue == nil ? .synchronousExecuting : .synchronousDelayed
        case nil: kind = .task  // nothing pending: the machine skips it
        }
        guard let generation = tally({ record.state.startAllowed(kind: kind, counters: &$0) }) else { return }
        record.noteRunStarted(generation)
        if let queue = limitQueue, !joinsSharedRun {
            takePlace(record, generation: generation, in: queue)
        }
        let body = record.pendingAction.take()!
        if mayHaveRareState { noteBodyToRunAgain(record, generation: generation, body: body) }
        if trace != nil { traceStart(record, generation, body) }
        if record.options.throttleNanoseconds > 0 { throttleState(record).lastStart = loop.now.nanoseconds }
        publish(record, TaskStateMachine.PhaseChange(generation: generation, phase: .running))
        #if TASKIDENTITY_INTERNAL_CHECKS
            checkInvariants(record)
        #endif
        if let list = record.options.timeLimits { armTimeLimit(record, generation: generation, kind: kind, list) }
        if let runHook {
            let attempt = record.options.retry != nil ? attempt(of: record, generation: generation) : nil
            runHook.runStarting(
                record, generation: generation, attempt: attempt, isQueuedSynchronous: kind == .synchronousDelayed
            ) { startBody(record, generation: generation, body) }
        } else {
            startBody(record, generation: generation, body)
        }
        // Raised by a waiter before it started (`escalate`): a flag, false until the first raise.
        if startsMayBeRaised, let raised = record.rare?.raisedPriority { startedRaised(record, raised) }
        // Under `appendInOrder`, the next identity waits beside this run from now on.
        if mayHaveRareState && record.options.appendMaxQueued != 0 { declareNextAppended(record) }
    }

    /// Calls the synchronous action, or makes the run's task, of a run that has started.
    @inline(__always)
    func startBody(_ record: AnyTaskRecord, generation: UInt64, _ body: RunBody) {
        switch body {
        case .task(let action):
            startTask(record, generation: generation, action)
        case .keyedTask(let action):
            if record.options.values.sharesRuns && !(record.identity is NoIdentity) {
                startShared(record, generation: generation, action)
            } else {
                startKeyedTask(record, generation: generation, action)
            }
        case .synchronous(let action):
            if let queue = record.options.synchronousQueue {
                let deadline = LoopInstant.nanoseconds(unretainedLoop.now.nanoseconds, plus: queue.delayNanoseconds)
                queue.push(
                    SynchronousRunEntry(
                        record: record, generation: generation, deadline: deadline, action: action,
                        identity: record.identity))
                pushProgressEntry(record, generation: generation)
            } else {
                // Ends before this returns: no progress to show, no time limit to watch.
                runSynchronously(record, generation: generation, identity: record.identity, action: action)
            }
        }
    }

    /// Arms the time limit (`timeout:`) of the run `generation` of `record`, just started.
    /// Apart from the hot path: most tasks have no limit. (A synchronous action called at once
    /// ends its run before `start` returns; the options hold no list for a limit at least as
    /// long as a synchronous delay.)
    @inline(never)
    func armTimeLimit(
        _ record: AnyTaskRecord, generation: UInt64, kind: TaskStateMachine.ActiveKind, _ list: TimeLimits
    ) {
        guard kind != .synchronousExecuting else { return }
        let node = list.add(record, generation: generation, now: unretainedLoop.now.nanoseconds)
        record.makeRare().timeLimit = TimeLimitLink(limits: list, node: node)
        let deadline = list.limit(node).deadline
        runNotes.update(RunKey(record: record, generation: generation)) { $0.deadline = deadline }
    }

    /// Starts the run's Swift task, on the loop or on the task's executor, and its progress
    /// signal. Loop thread only.
    func startTask(_ record: AnyTaskRecord, generation: UInt64, _ action: @escaping TaskAction) {
        let context = TaskContext(run: record, generation: generation, identity: record.identity)
        if let executor = record.options.values.executor.taskExecutor, executor !== loop {
            record.runningTask = startOffLoop(record, generation: generation, on: executor, context, action)
        } else {
            // The closure captures the context and the action alone (the record and the
            // generation are the context's): its capture box stays under 128 bytes, a size
            // glibc's malloc recycles from a fast bin.
            if let name = runTaskName(record, generation: generation) {
                record.runningTask = makeNamedRunTask(record, context, name, action)
                pushProgressEntry(record, generation: generation)
                return
            }
            record.runningTask = RunTask(executorPreference: loop, priority: record.options.priority) {
                () async throws -> Void in
                var failure: (any Error)?
                // The action is `nonisolated(nonsending)`: it runs right here, on the loop, with
                // the run's marker bound for it and its child tasks (`shutdown()` reads it).
                // The same few lines close `startOffLoop` and `KeyedAction.makeRunTask`, written
                // out in each: one shared async function taking the action as a closure cost
                // 786 instructions per W1 change (an async frame and a closure context per run).
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

    /// A named run's task on the loop, out of line: with a second `Task.init` in `startTask` the
    /// optimizer stops inlining either (about 100 instructions a W1 change, names off).
    @inline(never)
    func makeNamedRunTask(
        _ record: AnyTaskRecord, _ context: TaskContext, _ name: String, _ action: @escaping TaskAction
    ) -> RunTask {
        RunTask(name: name, executorPreference: loop, priority: record.options.priority) {
            await RegistryCore.runToEnd(context) { try await action(context) }
        }
    }

    /// A named run's operation on the loop: the action with the run's marker bound, then its
    /// end. Named runs (opt-in) pay this call; the unnamed ones write the same lines out in
    /// their task's closure, because `Task.init(name:…)`, even given nil, is not inlined
    /// (about 100 instructions a W1 change) and a shared function costs an async frame.
    static func runToEnd(_ context: TaskContext, _ body: () async throws -> Void) async {
        var failure: (any Error)?
        do {
            try await CurrentRun.$marker.withValue(CurrentRun(record: context.run, generation: context.generation)) {
                try await body()
            }
        } catch {
            failure = error
        }
        context.run.core.runEnded(context.run, generation: context.generation, failure: failure)
    }

    /// `startTask` for a template's action, which takes the slot's key: on the loop, the
    /// record (which knows its key's type) makes the task.
    func startKeyedTask(_ record: AnyTaskRecord, generation: UInt64, _ action: any KeyedTaskAction) {
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
    func startOffLoop(
        _ record: AnyTaskRecord, generation: UInt64, on executor: any TaskExecutor, _ context: TaskContext,
        _ action: @escaping TaskAction
    ) -> RunTask {
        if let name = runTaskName(record, generation: generation) {
            return makeNamedOffLoopTask(record, generation: generation, on: executor, name) {
                try await action(context)
            }
        }
        return RunTask(executorPreference: executor, priority: record.options.priority) { () async throws -> Void in
            var failure: (any Error)?
            do {
                try await CurrentRun.$marker.withValue(CurrentRun(record: record, generation: generation)) {
                    try await action(context)
                }
            } catch {
                failure = error
            }
            await self.postRunEnded(record, generation: generation, failure: failure)
        }
    }

    /// `startOffLoop` for a named run (out of line, as `makeNamedRunTask`).
    @inline(never)
    func makeNamedOffLoopTask(
        _ record: AnyTaskRecord, generation: UInt64, on executor: any TaskExecutor, _ name: String,
        _ body: @escaping @Sendable () async throws -> Void
    ) -> RunTask {
        RunTask(name: name, executorPreference: executor, priority: record.options.priority) {
            var failure: (any Error)?
            do {
                try await CurrentRun.$marker.withValue(CurrentRun(record: record, generation: generation)) {
                    try await body()
                }
            } catch {
                failure = error
            }
            await self.postRunEnded(record, generation: generation, failure: failure)
        }
    }

    /// The end of a run off the loop, posted to the loop (through the core's `LoopDoor` once
    /// the loop has shut down).
    nonisolated(nonsending) func postRunEnded(_ record: AnyTaskRecord, generation: UInt64, failure: (any Error)?) async
    {
        do {
            try loop.execute { self.runEnded(record, generation: generation, failure: failure) }
        } catch {
            await door.run { self.runEnded(record, generation: generation, failure: failure) }
        }
    }

    func pushProgressEntry(_ record: AnyTaskRecord, generation: UInt64) {
        guard let queue = record.options.progressQueue else { return }
        let deadline = LoopInstant.nanoseconds(unretainedLoop.now.nanoseconds, plus: queue.delayNanoseconds)
        queue.push(ProgressEntry(record: record, generation: generation, deadline: deadline))
    }

    /// Calls a synchronous run's action, inline on the loop thread, and ends the run.
    func runSynchronously(
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

    func synchronousRunDue(_ entry: SynchronousRunEntry) {
        // A loop running late may find the delay and a shorter limit both passed, the delay's
        // timer first: the limit wins, as it would have on time.
        if let link = entry.record.rare?.timeLimit {
            let limit = link.limits.limit(link.node)
            if limit.generation == entry.generation && limit.deadline <= unretainedLoop.now.nanoseconds {
                link.limits.remove(link.node)
                timeLimitPassed(limit)
                return
            }
        }
        guard entry.record.state.synchronousRunDue(generation: entry.generation) else { return }  // cancelled
        if let runHook {
            runHook.synchronousRunDue(entry.record, generation: entry.generation) {
                runSynchronously(
                    entry.record, generation: entry.generation, identity: entry.identity, action: entry.action)
            }
            return
        }
        runSynchronously(entry.record, generation: entry.generation, identity: entry.identity, action: entry.action)
    }
}
