import UVLoop

/// A keyed task registry: SwiftUI's `.task(id:)` lifecycle for servers, tools and libraries.
///
/// A **slot** (a key) is the analogue of a view; it hosts one task per `TaskName`, each declared
/// the way a view declares `.task`:
///
/// ```swift
/// let registry = TaskRegistry<SessionID>(loop: loop)
/// try registry.task(session, id: query, debounce: .milliseconds(250)) { context in
///     let results = try await search(query)
///     context.commit { show(results) }    // only if this run is still the current one
/// }
/// try registry.remove(session)          // the view disappeared: cancel everything it owns
/// ```
///
/// | declaration | effect |
/// | --- | --- |
/// | first for a task of a slot | start it (after the debounce, if any) |
/// | id equal (`==`) to the current one | nothing; the running action goes on |
/// | a different id | cancel the running action, start the new one (see `RestartPolicy`) |
/// | no id | once per slot lifetime; again only after `remove` and a new declaration |
///
/// Threading: the registry's state lives on its loop's thread, without locks. Calls made on
/// that thread act at once. Calls from other threads (`task`, `remove`, `cancel`, `runNow`,
/// `dropPending`) are posted: queued under a lock and applied in order, with one loop wake-up
/// per batch of calls; `flush()` awaits them. Nothing traps because of the calling thread and
/// nothing blocks it. Each member says which threads may call it.
public final class TaskRegistry<Key: Hashable & Sendable>: @unchecked Sendable {
    // The declaration path is @inlinable so that it is specialized for the caller's key type:
    // unspecialized generic code pays a metadata lookup per dictionary access (profiled at
    // about a fifth of a debounced change's cost).
    @usableFromInline let core: RegistryCore
    @exclusivity(unchecked) @usableFromInline var slots: [Key: TaskRecord<Key>] = [:]
    @usableFromInline let posted = PostedCalls<PostedOperation>(capacity: TaskRegistry.postedCallLimit)
    @exclusivity(unchecked) @usableFromInline var postedBuffer: [PostedOperation?] = []
    @exclusivity(unchecked) @usableFromInline var observers:
        [ObserverKey: [UInt64: AsyncStream<TaskPhaseUpdate>.Continuation]] = [:]
    private var nextObserverID: UInt64 = 0
    /// The slots' records when shutdown began, until every action has ended.
    private var recordsAtShutdown: [TaskRecord<Key>] = []
    /// Removed tasks whose cancelled runs have not ended, by slot and name: a task declared
    /// again in that slot waits for them under `awaitPrevious` and `keepRunning`.
    @exclusivity(unchecked) @usableFromInline var removedRunning: [ObserverKey: TaskRecord<Key>] = [:]
    /// The tracking of each observed task (`task(_:tracking:…)`), by slot and name.
    @exclusivity(unchecked) @usableFromInline var observations: [ObserverKey: AnyIdentityTracker] = [:]
    /// Where subscriptions post the observed tasks to re-evaluate, from any thread.
    let observationInbox: ObservationInbox
    /// How many runs a chain of observed runs may have after its first, each caused by the one
    /// before it, before the next re-evaluation is stopped as a cycle (see
    /// `ObservationCycleError`). 100 unless set with `init(loop:maxObservationDepth:)`.
    ///
    /// May be read from any thread.
    public let maxObservationDepth: Int

    /// A call from another thread, queued for the loop. Declarations are stored as values, not
    /// as closures: no allocation per call beyond the queue's growth, and nothing allocated on
    /// one thread to be freed on another.
    @usableFromInline
    enum PostedOperation {
        case declare(Key, TaskName, (any Hashable & Sendable)?, TaskOptions.Values, RunBody)
        case remove(Key)
        case control(Key, TaskName, TaskControl)
        case flush(UnsafeContinuation<Void, Never>)
        case observe(Key, TaskName, AsyncStream<TaskPhaseUpdate>.Continuation)
        case unobserve(ObserverKey, UInt64)
    }

    @usableFromInline
    struct ObserverKey: Hashable, Sendable {
        @usableFromInline let key: Key
        @usableFromInline let name: TaskName

        @usableFromInline
        init(key: Key, name: TaskName) {
            self.key = key
            self.name = name
        }
    }

    /// The loop whose thread owns the registry and runs its actions. May be read from any thread.
    public var loop: any TaskLoop { core.loop }

    /// Creates an empty registry on `loop` (a started `UVLoop`, or a `TestLoop`).
    ///
    /// May be called from any thread.
    public convenience init(loop: any TaskLoop) {
        self.init(loop: loop, log: RegistryLog())
    }

    /// Creates an empty registry on `loop` that reports to `log`. May be called from any thread.
    init(loop: any TaskLoop, log: RegistryLog, maxObservationDepth: Int = 100) {
        self.maxObservationDepth = maxObservationDepth
        core = RegistryCore(loop: loop, log: log)
        observationInbox = ObservationInbox(loop: loop)
        core.owner = self
        // If the loop shuts down first, the registry shuts down with it (on the loop thread,
        // before the loop closes its handles), so that every phase still ends final.
        loop.onShutdown { [weak self] in self?.applyShutdown() }
    }

    deinit {
        // Released without shutdown: like a view disappearing, every task is cancelled (phase
        // `cancelled(.registryShutDown)`) and every phase stream ends, on the loop thread.
        let core = self.core
        // Subscriptions may outlive the registry in the models' registrars: detach them now.
        for tracker in observations.values { tracker.subscription.cancel() }
        // Shut down already (by `startShutdown`, `shutdown` or its loop's hook, which closed the
        // queue first and held the registry until it was done): nothing is left to release.
        if posted.isClosed { return }
        // Calls posted and not applied yet (left for a shutdown hook that will now find no
        // registry): their waiters are answered, as after a shutdown.
        let dropped = posted.close(dropping: true)
        if !dropped.isEmpty { core.logDebug("registry released with \(dropped.count) posted calls not applied") }
        for operation in dropped { Self.abandon(operation) }
        // Whether the core is shut down is loop state: `run()` checks it there.
        let release = RegistryRelease(core: core, slots: slots, observers: observers)
        if loop.inLoop {
            release.run()
        } else {
            // Never released here, off the loop: its records hold timers and runs that only the
            // loop thread may close. Even between the loop's shutdown being requested and its
            // hooks running (when `execute` refuses), a job still runs on the loop.
            do { try loop.execute { release.run() } } catch {
                Task(executorPreference: loop) { release.run() }
            }
        }
    }

    // MARK: - Declaring

    /// Declares the task `name` of slot `key` with identity `id` (one value or several:
    /// `id: baseURL, path`), like `.task(id:priority:_:)`; with no `id`, like `.task {}`.
    ///
    /// - Parameters:
    ///   - key: the slot.
    ///   - name: which of the slot's tasks (default `.main`).
    ///   - id: the identity; an equal identity leaves the running action alone, a different one
    ///     restarts it. Omitted: the task runs once per slot lifetime.
    ///   - priority: the Swift task priority of the action; the loop runs higher ones first.
    ///   - debounce: start only once no new identity has arrived for this long; each change
    ///     inside the window re-arms it, and no Swift task exists until the action starts.
    ///   - throttle: start at most once per window; identities arriving inside it wait, and the
    ///     latest starts when the window closes.
    ///   - policy: what a new identity does to a run still in progress.
    ///   - progressDelay: turn the run's progress signal on only if it is still running after
    ///     this long, so fast runs never flash a spinner.
    ///   - executor: where the action runs: the registry's loop (the default), `.global` for
    ///     actions that compute, or any `TaskExecutor` (see `ActionExecutor`). The bookkeeping
    ///     stays on the loop either way; off the loop, commit with `commitOnLoop`.
    ///   - action: the work; it receives a `TaskContext` and runs as a Swift task on `executor`.
    ///     Usually a trailing closure; passed by name it needs its `action:` label, since the
    ///     `id:` values before it are variadic.
    /// - Throws: `RegistryError.shutDown` after shutdown; `.invalidDuration` for a negative
    ///   duration; from another thread, `.loopNotStarted` before the loop starts and
    ///   `.overloaded` when `postedCallLimit` calls are already queued for the loop.
    /// - Note: May be called from any thread, and never blocks it. On the loop thread it acts at
    ///   once. From another thread it is queued for the loop (one wake-up per batch of calls)
    ///   and returns; when the loop falls `postedCallLimit` calls behind, further declarations
    ///   are refused with `.overloaded` rather than parking the calling thread (which may be a
    ///   cooperative-pool thread or a NIO event loop). On `.overloaded`, `await flush()` and
    ///   declare again: see the README's "Declaring from other threads" for the measured
    ///   trade-off.
    @inlinable
    public func task<each ID: Hashable & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        id: repeat each ID,
        priority: TaskPriority = .userInitiated,
        debounce: Duration = .zero,
        throttle: Duration = .zero,
        policy: RestartPolicy = .cancelPrevious,
        progressDelay: Duration? = nil,
        executor: ActionExecutor = .loop,
        action: @escaping TaskAction
    ) throws(RegistryError) {
        let values = try TaskOptions.Values(
            priority: priority, policy: policy, debounce: debounce, throttle: throttle, progressDelay: progressDelay,
            executor: executor)
        try declare(key, name: name, identity: makeIdentity(repeat each id), values: values, body: .task(action))
    }

    @inlinable
    func declare(
        _ key: Key, name: TaskName, identity: (any Hashable & Sendable)?, values: TaskOptions.Values,
        body: RunBody
    ) throws(RegistryError) {
        if core.unretainedLoop.inLoop {
            guard !core.isShutDown else { throw .shutDown }
            apply(key, name: name, identity: identity, values: values, body: body)
        } else {
            // Shutdown applies what was posted before it, so this always finds it running.
            try post(.declare(key, name, identity, values, body), limited: true)
        }
    }

    @inlinable
    func apply(
        _ key: Key, name: TaskName, identity: (any Hashable & Sendable)?, values: TaskOptions.Values,
        body: RunBody, observed: Bool = false
    ) {
        // A declaration with an explicit identity replaces an observed one: its tracking ends.
        if !observations.isEmpty && !observed { stopObserving(ObserverKey(key: key, name: name)) }
        let existing = record(key, name)
        let options: TaskOptions
        if let existing, existing.options.values == values {
            options = existing.options
        } else {
            do {
                options = try core.options(for: values)
            } catch {
                // Only a loop that is shutting down refuses a timer; the registry goes with it.
                core.logDebug("declaration of task '\(name)' dropped: the loop refused a timer (\(error))")
                return
            }
        }
        if let existing {
            core.declare(existing, isNew: false, identity: identity, options: options, body: body)
            return
        }
        let record = TaskRecord(key: key, name: name, registry: self, options: options)
        if !removedRunning.isEmpty, let previous = removedRunning.removeValue(forKey: ObserverKey(key: key, name: name))
        {
            core.inherit(record, endingRunsOf: previous)
        }
        if let first = slots[key] {
            var last: AnyTaskRecord = first
            while let next = last.nextInSlot { last = next }
            last.nextInSlot = record
        } else {
            slots[key] = record
            core.counters.liveSlots &+= 1
        }
        if !observers.isEmpty { record.hasObservers = observers[ObserverKey(key: key, name: name)] != nil }
        core.declare(record, isNew: true, identity: identity, options: options, body: body)
    }

    @inlinable
    func record(_ key: Key, _ name: TaskName) -> TaskRecord<Key>? {
        guard let first = slots[key] else { return nil }
        if first.name == name { return first }
        var next = first.nextInSlot
        while let candidate = next {
            if candidate.name == name { return candidate as? TaskRecord<Key> }
            next = candidate.nextInSlot
        }
        return nil
    }

    /// Removes slot `key`, cancelling every task it hosts (phase `cancelled(.removed)`), like a
    /// view disappearing. Removing an unknown key does nothing.
    ///
    /// - Throws: `RegistryError.shutDown` after shutdown; from another thread,
    ///   `.loopNotStarted` and `.overloaded` as for `task`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    public func remove(_ key: Key) throws(RegistryError) {
        if loop.inLoop {
            guard !core.isShutDown else { throw .shutDown }
            applyRemove(key, reason: .removed)
        } else {
            try post(.remove(key), limited: true)
        }
    }

    // MARK: - Controlling a declared task

    /// Cancels the task `name` of slot `key` without removing it, like TCA's
    /// `.cancel(id:)`: a generation still waiting (debounce, throttle, a previous run) ends
    /// `cancelled(.cancelledByCaller)` without starting, and the running action is cancelled
    /// (its phase `cancelled(.cancelledByCaller)`; its later commits are dropped). The slot
    /// and the task's other state stay; the task forgets its identity, so the next
    /// declaration starts a new run even with an equal id. A task that is not declared, or
    /// has nothing waiting or running, is left alone.
    ///
    /// - Throws: as `remove(_:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    public func cancel(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try control(key, name, .cancel)
    }

    /// Starts the generation of the task that is waiting out its debounce or throttle window
    /// now, as if the window had closed ("Enter" in a search box). It still respects the
    /// restart policy: under `awaitPrevious` or `keepRunning` it waits for the previous run,
    /// and a throttled task that waits so is held by its throttle again if the window is still
    /// open when the previous run ends. A task with nothing debouncing or throttled is left
    /// alone.
    ///
    /// - Throws: as `remove(_:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once (the run starts in this loop turn's start pass).
    public func runNow(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try control(key, name, .runNow)
    }

    /// Drops the generation of the task that has not started yet (waiting out its debounce or
    /// throttle, or for a previous run) ("Escape" in a search box): it ends
    /// `cancelled(.pendingDropped)` without running. The task forgets its identity, so
    /// declaring the same id again starts it again. A task with nothing waiting is left alone.
    ///
    /// A run already under way (`keepRunning`) goes on and its commits still land, but the
    /// task's phase stays that of its latest generation, the dropped one, until the next
    /// declaration; declaring the running id again runs it once more after the current run.
    /// Read what the running run stores with `result(of:as:)` or `snapshot(of:)`.
    ///
    /// - Throws: as `remove(_:)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    public func dropPending(_ key: Key, name: TaskName = .main) throws(RegistryError) {
        try control(key, name, .dropPending)
    }

    private func control(_ key: Key, _ name: TaskName, _ control: TaskControl) throws(RegistryError) {
        if loop.inLoop {
            guard !core.isShutDown else { throw .shutDown }
            applyControl(key, name, control)
        } else {
            try post(.control(key, name, control), limited: true)
        }
    }

    @usableFromInline
    func applyControl(_ key: Key, _ name: TaskName, _ control: TaskControl) {
        guard let record = record(key, name) else { return }
        switch control {
        case .cancel: core.cancelByCaller(record)
        case .runNow: core.runNow(record)
        case .dropPending: core.dropPending(record)
        }
    }

    @usableFromInline
    func applyRemove(_ key: Key, reason: CancellationReason) {
        guard let first = slots.removeValue(forKey: key) else { return }
        core.counters.liveSlots &-= 1
        var next: AnyTaskRecord? = first
        while let record = next {
            if !observations.isEmpty { stopObserving(ObserverKey(key: key, name: record.name)) }
            core.remove(record, reason: reason)
            if record.state.endingRuns > 0 && reason == .removed {
                removedRunning[ObserverKey(key: key, name: record.name)] = unsafeDowncast(
                    record, to: TaskRecord<Key>.self)
            }
            next = record.nextInSlot
        }
    }

    /// The removed task `record` has no run left: a re-declared task has nothing to wait for.
    func forgetRemoved(_ record: TaskRecord<Key>) {
        let observerKey = ObserverKey(key: record.key, name: record.name)
        if removedRunning[observerKey] === record { removedRunning[observerKey] = nil }
    }

    // MARK: - Posting from other threads

    /// The most calls from other threads that may wait for the loop at once; past it, a
    /// declaration, removal or control call from another thread throws
    /// `RegistryError.overloaded` (see `task`).
    ///
    /// May be read from any thread.
    public static var postedCallLimit: Int { 65_536 }

    @inlinable
    func post(_ operation: PostedOperation, limited: Bool = false) throws(RegistryError) {
        // Before the loop starts nothing can drain the queue: refuse, and keep the registry
        // usable for when it does.
        guard loop.hasStarted else { throw posted.isClosed ? .shutDown : .loopNotStarted }
        guard try posted.append(operation, limited: limited) else { return }
        do {
            try loop.execute { [self] in self.runPosted() }  // one wake-up per batch
        } catch {
            // The loop's shutdown has begun, and this registry's hook has not closed the queue
            // yet (the append above found it open): the hook applies what is queued, this call
            // with it, before it cancels every task. So the call succeeded, and its phase will
            // say how it ended. (Dropping the queue here used to tell this caller `.shutDown`
            // for a call the hook applied, and a caller whose call joined this batch success
            // for a call that was dropped.)
            core.logDebug("calls posted as the loop began its shutdown are left to the shutdown hook (\(error))")
        }
    }

    /// Applies every posted operation, in order. Loop thread only.
    @inlinable
    func runPosted() {
        posted.take(into: &postedBuffer)
        for index in postedBuffer.indices {
            // Moved out, not copied: a copy would retain and release every payload.
            switch postedBuffer[index].take()! {
            case .declare(let key, let name, let identity, let values, let body):
                apply(key, name: name, identity: identity, values: values, body: body)
            case .remove(let key):
                applyRemove(key, reason: .removed)
            case .control(let key, let name, let control):
                applyControl(key, name, control)
            case .flush(let continuation):
                continuation.resume()
            case .observe(let key, let name, let continuation):
                addObserver(continuation, key: key, name: name)
            case .unobserve(let observerKey, let id):
                removeObserver(observerKey, id: id)
            }
        }
        postedBuffer.removeAll(keepingCapacity: true)
    }

    /// Answers a posted call that can no longer be applied.
    @usableFromInline
    static func abandon(_ operation: PostedOperation) {
        switch operation {
        case .flush(let continuation): continuation.resume()
        case .observe(_, _, let continuation): continuation.finish()
        case .declare, .remove, .control, .unobserve: break
        }
    }

    /// Returns once every `task`/`remove` posted from other threads before this call has been
    /// applied. Call it before reading what those calls did (`countersSnapshot()`, a
    /// `submit` on the loop): a posted call is applied in its batch, which may run after a
    /// closure you post to the loop yourself.
    ///
    /// - Note: May be called from any task.
    public func flush() async {
        if loop.inLoop {
            runPosted()
            return
        }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            do {
                try post(.flush(continuation))
            } catch {
                continuation.resume()  // shut down: nothing is pending any more
            }
        }
    }

    // MARK: - Querying on the loop thread

    /// The phase of the task `name` of slot `key`, or `nil` if no such task is declared.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func phase(of key: Key, name: TaskName = .main) throws(RegistryError) -> TaskPhase? {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.phase
    }

    /// Whether the delayed progress signal of the task is on.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func showsProgress(of key: Key, name: TaskName = .main) throws(RegistryError) -> Bool {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.showsProgress ?? false
    }

    /// The current generation of the task (how many identities it has had in this slot's
    /// lifetime), or `nil` if no such task is declared.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func generation(of key: Key, name: TaskName = .main) throws(RegistryError) -> UInt64? {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.generation
    }

    /// The latest result stored by a run of the task `name` of slot `key`
    /// (`TaskContext.commit(result:)`), as `type`; `nil` if none was stored, if it is of
    /// another type, or if no such task is declared. A result outlives its run: it stays until
    /// a newer run stores one or the slot is removed.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func result<Value>(of key: Key, name: TaskName = .main, as type: Value.Type) throws(RegistryError) -> Value?
    {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.result?.value as? Value
    }

    /// Whether slot `key` exists.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(ofSlot:)` there).
    /// - Note: Loop thread only; never traps.
    public func contains(_ key: Key) throws(RegistryError) -> Bool {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return slots[key] != nil
    }

    /// The counters.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `countersSnapshot()` there).
    /// - Note: Loop thread only; never traps.
    public var counters: RegistryCounters {
        get throws(RegistryError) {
            guard loop.inLoop else { throw .calledOffLoopThread }
            return core.counters
        }
    }

    /// Timers the registry holds open (one per distinct debounce, progress and synchronous-run
    /// delay, one per throttled task). 0 after shutdown.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    public var openTimerCount: Int {
        get throws(RegistryError) {
            guard loop.inLoop else { throw .calledOffLoopThread }
            return core.openTimerCount
        }
    }

    // MARK: - Querying from any thread

    /// The task `name` of slot `key` as it is now (phase, generation, progress signal, latest
    /// result), read on the loop thread in one hop; `nil` if no such task is declared.
    ///
    /// - Throws: `RegistryError.loopNotStarted` before the loop starts, `.shutDown` once the
    ///   loop has shut down. (After the registry's own shutdown, with its loop still running,
    ///   it answers `nil`: every slot is gone.)
    /// - Note: May be called from any task; on the loop thread it reads at once.
    public func snapshot(of key: Key, name: TaskName = .main) async throws(RegistryError) -> TaskSnapshot? {
        try await onLoop { [self] in self.record(key, name).map(TaskSnapshot.init(record:)) }
    }

    /// Every task of slot `key` as it is now, by name; empty if the slot does not exist (so
    /// `isEmpty` answers "is there such a slot" from any thread).
    ///
    /// - Throws: as `snapshot(of:name:)`.
    /// - Note: May be called from any task.
    public func snapshot(ofSlot key: Key) async throws(RegistryError) -> [TaskName: TaskSnapshot] {
        try await onLoop { [self] in
            var tasks: [TaskName: TaskSnapshot] = [:]
            var next: AnyTaskRecord? = self.slots[key]
            while let record = next {
                tasks[record.name] = TaskSnapshot(record: record)
                next = record.nextInSlot
            }
            return tasks
        }
    }

    /// The counters, read on the loop thread.
    ///
    /// - Throws: as `snapshot(of:name:)`.
    /// - Note: May be called from any task.
    public func countersSnapshot() async throws(RegistryError) -> RegistryCounters {
        try await onLoop { [self] in self.core.counters }
    }

    /// Runs `body` on the loop thread and returns its result, translating the loop's refusal.
    private func onLoop<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async throws(RegistryError)
        -> Result
    {
        if loop.inLoop { return body() }
        guard loop.hasStarted else { throw .loopNotStarted }
        do {
            return try await loop.submit(body)
        } catch {
            throw .shutDown  // `submit` fails only when the loop refuses work: it has shut down
        }
    }

    /// The phases of the task `name` of slot `key`, starting with its phase now (`idle` if it is
    /// not declared), across removals and re-declarations, until the registry shuts down.
    ///
    /// - Parameters:
    ///   - key: the slot.
    ///   - name: which of the slot's tasks (default `.main`).
    ///   - bufferingPolicy: what the stream keeps for a consumer that falls behind. The default
    ///     keeps every update (memory grows with a slow consumer); a view that only shows the
    ///     current phase wants `.bufferingNewest(1)`, which keeps the latest.
    /// - Note: May be called from any thread; the stream may be consumed anywhere. Requested
    ///   from another thread before the loop starts, the stream ends at once, empty.
    public func phaseUpdates(
        of key: Key, name: TaskName = .main,
        bufferingPolicy: AsyncStream<TaskPhaseUpdate>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<TaskPhaseUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: TaskPhaseUpdate.self, bufferingPolicy: bufferingPolicy)
        if loop.inLoop {
            addObserver(continuation, key: key, name: name)
        } else {
            do { try post(.observe(key, name, continuation)) } catch {
                core.log.debug("phase stream of task '\(name)' ended at once: \(error)")
                continuation.finish()
            }
        }
        return stream
    }

    @usableFromInline
    func addObserver(_ continuation: AsyncStream<TaskPhaseUpdate>.Continuation, key: Key, name: TaskName) {
        guard !core.isShutDown else {
            continuation.finish()
            return
        }
        let observerKey = ObserverKey(key: key, name: name)
        let id = nextObserverID
        nextObserverID += 1
        observers[observerKey, default: [:]][id] = continuation
        let current = record(key, name)
        current?.hasObservers = true
        continuation.yield(
            TaskPhaseUpdate(
                generation: current?.generation ?? 0, phase: current?.phase ?? .idle,
                showsProgress: current?.showsProgress ?? false))
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            if self.loop.inLoop {
                self.removeObserver(observerKey, id: id)
            } else {
                try? self.post(.unobserve(observerKey, id))
            }
        }
    }

    @usableFromInline
    func removeObserver(_ observerKey: ObserverKey, id: UInt64) {
        observers[observerKey]?[id] = nil
        if observers[observerKey]?.isEmpty == true {
            observers[observerKey] = nil
            record(observerKey.key, observerKey.name)?.hasObservers = false
        }
    }

    /// Sends one update to the observers of `record`. Loop thread only.
    func publish(_ record: TaskRecord<Key>, generation: UInt64, phase: TaskPhase) {
        guard let list = observers[ObserverKey(key: record.key, name: record.name)] else {
            record.hasObservers = false
            return
        }
        let update = TaskPhaseUpdate(generation: generation, phase: phase, showsProgress: record.showsProgress)
        for continuation in list.values { continuation.yield(update) }
    }

    // MARK: - Shutdown

    /// Starts shutting down: applies what was posted, cancels every waiting and running
    /// generation (phase `cancelled(.registryShutDown)`), closes every timer, and ends the
    /// phase streams once the last action has ended. Later declarations throw
    /// `RegistryError.shutDown`. Idempotent. On a `UVLoop` that has not started, declarations
    /// are refused at once and the rest happens on the loop thread when it starts (or on the
    /// thread that shuts the loop down without starting it).
    ///
    /// - Note: May be called from any thread; `shutdown()` also waits for the actions to end.
    public func startShutdown() {
        if loop.inLoop {
            applyShutdown()
            return
        }
        if !loop.hasStarted {
            // Declarations from now on are refused with `.shutDown`, even before the loop starts.
            _ = posted.close(dropping: false)
            // A loop that has not started takes jobs, not closures: this one runs on its thread
            // once it starts (or on the thread that shuts it down without starting it).
            Task(executorPreference: loop) { [self] in self.applyShutdown() }
            return
        }
        do { try loop.execute { [self] in self.applyShutdown() } } catch {
            // The loop's shutdown has begun: its hook shuts the registry down, or already has.
            core.logDebug("startShutdown: the loop takes no more work (\(error))")
        }
    }

    /// Shuts down (see `startShutdown()`) and returns once every action has ended. Once the
    /// loop's own shutdown has begun, the loop's shutdown hook shuts the registry down and this
    /// returns at once: await the loop's shutdown instead (`await loop.shutdown()`). On a loop
    /// that has not started, it returns at once (no action has run), like `startShutdown()`.
    ///
    /// - Note: May be called from any task. With a `TestLoop`, call `startShutdown()` and run
    ///   the loop instead: nothing runs on a test loop while a test awaits.
    public func shutdown() async {
        if !loop.hasStarted {
            // Nothing runs yet, so nothing to wait for: the shutdown happens when the loop starts.
            startShutdown()
            return
        }
        let caller = withUnsafeCurrentTask { $0.map(taskAddress) }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let work: @Sendable () -> Void = { [self] in
                // Awaited inside one of this registry's own actions, shutdown must not wait for
                // that action: it returns once every other action has ended.
                let callerIsRun = caller.map(self.isRunningTask) ?? false
                self.applyShutdown()
                self.core.whenQuiesced(callerIsRun: callerIsRun) { continuation.resume() }
            }
            if loop.inLoop {
                work()
            } else {
                // Once the loop's shutdown has begun, its hook shuts the registry down: that
                // shutdown is the one to await (`await loop.shutdown()`).
                do { try loop.execute(work) } catch { continuation.resume() }
            }
        }
    }

    /// Whether `task` is the Swift task of a run of this registry (the latest run of one of
    /// its tasks, current or cancelled). Loop thread only.
    private func isRunningTask(_ task: UInt) -> Bool {
        func runs(_ first: AnyTaskRecord) -> Bool {
            var next: AnyTaskRecord? = first
            while let record = next {
                if let running = record.runningTask, taskAddress(running) == task { return true }
                next = record.nextInSlot
            }
            return false
        }
        return slots.values.contains(where: runs) || removedRunning.values.contains(where: runs)
            || recordsAtShutdown.contains(where: runs) || core.successorRecords.contains(where: runs)
    }

    /// Whether shutdown has begun.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    public var isShutDown: Bool {
        get throws(RegistryError) {
            guard loop.inLoop else { throw .calledOffLoopThread }
            return core.isShutDown
        }
    }

    private func applyShutdown() {
        guard !core.isShutDown else { return }
        _ = posted.close(dropping: false)
        runPosted()
        core.beginShutdown()
        // Kept until every action has ended: `shutdown()` awaited later inside one of them
        // still finds it among this registry's runs.
        recordsAtShutdown = Array(slots.values) + Array(removedRunning.values)
        for key in Array(slots.keys) { applyRemove(key, reason: .registryShutDown) }
        for tracker in observations.values { tracker.stop() }
        observations = [:]
        removedRunning = [:]
        core.closeTimers()
        core.whenQuiesced { [self] in
            for list in self.observers.values { for continuation in list.values { continuation.finish() } }
            self.observers = [:]
            self.recordsAtShutdown = []
        }
    }
}

/// What a registry released without `shutdown()` leaves to do on its loop thread: shut its
/// core down, cancel every task, and end every phase stream.
private struct RegistryRelease<Key: Hashable & Sendable>: @unchecked Sendable {
    // @unchecked Sendable: moved to the loop thread whole, and used only there (the registry
    // that owned these is gone, so nothing else touches them).
    let core: RegistryCore
    let slots: [Key: TaskRecord<Key>]
    let observers: [TaskRegistry<Key>.ObserverKey: [UInt64: AsyncStream<TaskPhaseUpdate>.Continuation]]

    func run() {
        guard !core.isShutDown else { return }
        core.beginShutdown()
        for first in slots.values {
            var next: AnyTaskRecord? = first
            while let record = next {
                core.remove(record, reason: .registryShutDown)
                next = record.nextInSlot
            }
            core.counters.liveSlots &-= 1
        }
        core.closeTimers()
        for list in observers.values {
            for continuation in list.values {
                continuation.yield(
                    TaskPhaseUpdate(generation: 0, phase: .cancelled(.registryShutDown), showsProgress: false))
                continuation.finish()
            }
        }
    }
}

/// The address of a Swift task, from its handle or from inside it. Both are a single
/// reference to the task object; comparing addresses is exact, where comparing hash values
/// would only be likely.
func taskAddress(_ task: RunTask) -> UInt {
    // unsafeBitCast: `Task` is one reference to the task object (checked by its size here, and
    // by the shutdown-inside-an-action test, which would hang if the addresses differed).
    precondition(MemoryLayout<RunTask>.size == MemoryLayout<UInt>.size)
    return unsafeBitCast(task, to: UInt.self)
}

func taskAddress(_ task: UnsafeCurrentTask) -> UInt {
    // unsafeBitCast: `UnsafeCurrentTask` is one reference to the same task object (see above).
    precondition(MemoryLayout<UnsafeCurrentTask>.size == MemoryLayout<UInt>.size)
    return unsafeBitCast(task, to: UInt.self)
}

/// The stored identity of a declaration: `nil` for none, the value itself for one, a
/// `CompoundIdentity` for several.
@inlinable
func makeIdentity<each ID: Hashable & Sendable>(_ id: repeat each ID) -> (any Hashable & Sendable)? {
    var count = 0
    var first: (any Hashable & Sendable)?
    for value in repeat each id {
        if count == 0 { first = value }
        count += 1
    }
    switch count {
    case 0: return nil
    case 1: return first
    default: return CompoundIdentity(repeat each id)
    }
}
