import TaskLoopCore

#if Tracing
    import Tracing
#endif

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
    // @unchecked Sendable: used from any thread, but its tables are touched on the loop thread
    // only: members check the thread or post to the loop (`PostedCalls`).
    //
    // The declaration path is @inlinable so that it is specialized for the caller's key type:
    // unspecialized generic code pays a metadata lookup per dictionary access (profiled at
    // about a fifth of a debounced change's cost).
    @usableFromInline let core: RegistryCore
    // @exclusivity(unchecked): the slots, loop thread only; no access is held across a call.
    @exclusivity(unchecked) @usableFromInline var slots = SlotTable<Key>()
    @usableFromInline let posted: PostedCalls<PostedOperation>
    // @exclusivity(unchecked): `runPosted`'s swap buffer, loop thread only; no access held across a call.
    @exclusivity(unchecked) @usableFromInline var postedBuffer: [PostedOperation?] = []
    /// The phase streams of the tasks (`phaseUpdates(of:)`), shared with the core.
    @usableFromInline let phaseStreams: PhaseStreams<Key>
    /// Removed tasks whose cancelled runs have not ended, by slot and name: a task declared
    /// again in that slot waits for them under `awaitPrevious` and `keepRunning`. Unchecked
    /// exclusivity: loop thread only.
    @exclusivity(unchecked) @usableFromInline var removedRunning: [ObserverKey: TaskRecord<Key>] = [:]
    /// The tracking of each observed task (`task(_:tracking:…)`), by slot and name. Unchecked
    /// exclusivity: loop thread only.
    @exclusivity(unchecked) @usableFromInline var observations: [ObserverKey: AnyIdentityTracker] = [:]
    /// The consumption of each task declared from a sequence (`task(_:identities:…)`), by slot,
    /// then name: a removal stops a slot's consumers even before their first element declared
    /// anything. Unchecked exclusivity: loop thread only.
    @exclusivity(unchecked) var identityStreams: [Key: [TaskName: IdentityStreamConsumer<Key>]] = [:]
    /// Where subscriptions post the observed tasks to re-evaluate, from any thread.
    let observationInbox: ObservationInbox
    /// The end of `startShutdown(gracePeriod:)`'s grace period, while it runs. Loop thread only.
    var gracePeriodTimer: (any LoopTimer)?
    /// The settings the registry was made with (see `RegistryConfiguration`).
    ///
    /// May be read from any thread.
    public let configuration: RegistryConfiguration
    /// How many runs a chain of observed runs may have after its first before the next
    /// re-evaluation is stopped as a cycle: `configuration.maxObservationDepth`.
    ///
    /// May be read from any thread.
    public var maxObservationDepth: Int { configuration.maxObservationDepth }
    /// How observed identities hear of writes (`ObservationMechanism.default` unless a test
    /// picks the other). Immutable.
    let observationMechanism: ObservationMechanism

    /// A call from another thread, queued for the loop. Declarations are stored as values, not
    /// as closures: no allocation per call beyond the queue's growth, and nothing allocated on
    /// one thread to be freed on another.
    @usableFromInline
    enum PostedOperation {
        case declare(Key, TaskName, any Hashable & Sendable, TaskOptions.Values, RunBody)
        #if Tracing
            /// A declaration made where a trace context was bound (trait `Tracing`).
            case declareTraced(Key, TaskName, any Hashable & Sendable, TaskOptions.Values, RunBody, ServiceContext)
        #endif
        case remove(Key)
        case control(Key, TaskName, TaskControl)
        case flush(UnsafeContinuation<Void, Never>)
        case observe(Key, TaskName, AsyncStream<TaskPhaseUpdate>.Continuation)
        case unobserve(ObserverKey, UInt64)
        case followIdentities(@Sendable (TaskRegistry<Key>) -> Void)
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

    /// Creates an empty registry on `loop` (a started `UVLoop`, a `NIOTaskLoop`, or a
    /// `TestLoop`), with every setting at its default.
    ///
    /// May be called from any thread.
    public convenience init(loop: any TaskLoop) {
        self.init(loop: loop, checked: RegistryConfiguration())
    }

    /// Creates an empty registry on `loop` with `configuration`'s settings (see
    /// `RegistryConfiguration`).
    ///
    /// - Throws: `RegistryError` for a setting out of range (`.invalidObservationDepth`,
    ///   `.invalidPostedCallLimit`, `.invalidTraceCapacity`, `.invalidDuration`); nothing is
    ///   made then.
    /// - Note: May be called from any thread.
    public convenience init(loop: any TaskLoop, configuration: RegistryConfiguration) throws(RegistryError) {
        try configuration.validate()
        self.init(loop: loop, checked: configuration)
    }

    /// Creates an empty registry from a configuration already validated. May be called from any
    /// thread.
    init(
        loop: any TaskLoop, checked configuration: RegistryConfiguration,
        observationMechanism: ObservationMechanism = .default
    ) {
        self.configuration = configuration
        self.observationMechanism = observationMechanism
        posted = PostedCalls(capacity: configuration.postedCallLimit)
        let phaseStreams = PhaseStreams<Key>()
        self.phaseStreams = phaseStreams
        core = RegistryCore(
            loop: loop, configuration: configuration, phaseStreams: phaseStreams, runHook: configuration.makeRunHook())
        // Not shared with any thread yet: the recorder can be set before the loop sees the core.
        if let capacity = configuration.traceCapacity {
            core.useTraceRecorder(core.makeTraceRecorder(capacity: capacity))
        } else {
            core.useTraceRecorder(core.idleTraceRecorder)
        }
        observationInbox = ObservationInbox(loop: loop)
        core.adopt(owner: self)
        // If the loop shuts down first, the registry shuts down with it (on the loop thread,
        // before the loop closes its handles), so that every phase still ends final.
        loop.onShutdown { [weak self] in self?.applyShutdown() }
        startConfiguredExports()
    }

    deinit {
        // Released without shutdown: like a view disappearing, every task still waiting or
        // running is cancelled (phase `cancelled(.registryShutDown)`) and every phase stream
        // ends, on the loop thread, as `shutdown()` would do it.
        let core = self.core
        // Subscriptions may outlive the registry in the models' registrars: detach them now.
        for tracker in observations.values { tracker.subscription.cancel() }
        // Consumers hold the registry weakly: stop them, or they would wait for their next element.
        for consumers in identityStreams.values { for consumer in consumers.values { consumer.task?.cancel() } }
        // Shut down already (by `startShutdown`, `shutdown` or its loop's hook, which closed the
        // queue first and held the registry until it was done): nothing is left to release.
        if posted.isClosed { return }
        // Calls posted and not applied yet (left for a shutdown hook that will now find no
        // registry): their waiters are answered, as after a shutdown.
        let dropped = posted.close(dropping: true)
        if !dropped.isEmpty { core.logDebug("registry released with \(dropped.count) posted calls not applied") }
        for operation in dropped { Self.abandon(operation) }
        // Whether the core is shut down is loop state: `run()` checks it there.
        let release = RegistryRelease(core: core, slots: slots, phaseStreams: phaseStreams)
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
    ///   - maxWait: a debounce window that keeps re-opening closes at most this long after it
    ///     first opened, with the latest identity (nil: no bound; at least a nanosecond).
    ///   - throttle: start at most once per window; identities arriving inside it wait, and the
    ///     latest starts when the window closes.
    ///   - policy: what a new identity does to a run still in progress.
    ///   - progressDelay: turn the run's progress signal on only if it is still running after
    ///     this long, so fast runs never flash a spinner.
    ///   - timeout: a time limit for each run, from its start, on the loop's timers (no extra
    ///     Swift task): a run still running when it passes is cancelled, phase
    ///     `cancelled(.timedOut)`. As after a failure, the task keeps its identity: declaring
    ///     the same id again does not run it again. nil (the default): no limit.
    ///   - limit: a cap on runs at once, shared by every task declared with the same
    ///     `ConcurrencyLimit`: a run past it waits in the limit's queue (phase `waiting`), and a
    ///     new identity replaces a queued one, which never starts, and joins at the back. nil (the
    ///     default): the registry's `configuration.concurrencyLimit`, if any.
    ///   - retry: how a run that fails is tried again (see `RetryPolicy`): each attempt is a
    ///     run of the same generation, the waits between them loop timers. nil (the default):
    ///     a failed run ends `failed`.
    ///   - staleAfter: how long the outcome of the task's last run stays fresh: declaring the
    ///     same identity again once the run has ended, and this long has passed since, runs it
    ///     again (a new generation). nil (the default): the same identity never reruns.
    ///   - refreshEvery: run the current identity again this long after each run ends (it
    ///     finished, failed, timed out, or was cancelled by its own action), as a new generation, like a poller per key, until a
    ///     new identity replaces it or the task is removed or cancelled. nil (the default): never.
    ///   - executor: where the action runs: the registry's loop (the default), `.global` for
    ///     actions that compute, or any `TaskExecutor` (see `ActionExecutor`). The bookkeeping
    ///     stays on the loop either way; off the loop, commit with `commitOnLoop`.
    ///   - action: the work; it receives a `TaskContext` and runs as a Swift task on `executor`.
    ///     Usually a trailing closure; passed by name it needs its `action:` label, since the
    ///     `id:` values before it are variadic.
    /// - Throws: `RegistryError.shutDown` after shutdown; `.invalidDuration` for a negative
    ///   duration or a `timeout` under a nanosecond; from another thread, `.loopNotStarted` before the loop starts and
    ///   `.overloaded` when `configuration.postedCallLimit` calls are already queued for the loop.
    /// - Note: May be called from any thread, and never blocks it. On the loop thread it acts at
    ///   once. From another thread it is queued for the loop (one wake-up per batch of calls)
    ///   and returns; when the loop falls `configuration.postedCallLimit` calls behind, further declarations
    ///   are refused with `.overloaded` rather than parking the calling thread (which may be a
    ///   cooperative-pool thread or a NIO event loop). On `.overloaded`, `await flush()` and
    ///   declare again: see docs/REGISTRY.md, "From any thread", for the measured
    ///   trade-off.
    @inlinable
    public func task<each ID: Hashable & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        id: repeat each ID,
        priority: TaskPriority = TaskOptionDefaults.priority,
        debounce: Duration = TaskOptionDefaults.debounce,
        maxWait: Duration? = TaskOptionDefaults.maxWait,
        throttle: Duration = TaskOptionDefaults.throttle,
        policy: RestartPolicy = TaskOptionDefaults.policy,
        progressDelay: Duration? = TaskOptionDefaults.progressDelay,
        timeout: Duration? = TaskOptionDefaults.timeout,
        limit: ConcurrencyLimit? = TaskOptionDefaults.limit,
        retry: RetryPolicy? = TaskOptionDefaults.retry,
        staleAfter: Duration? = TaskOptionDefaults.staleAfter,
        refreshEvery: Duration? = TaskOptionDefaults.refreshEvery,
        executor: ActionExecutor = TaskOptionDefaults.executor,
        action: @escaping TaskAction
    ) throws(RegistryError) {
        let values = try TaskOptions.Values(
            priority: priority, policy: policy, debounce: debounce, maxWait: maxWait, throttle: throttle,
            progressDelay: progressDelay,
            timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter, refreshEvery: refreshEvery,
            executor: executor)
        try declare(
            key, name: name, identity: ErasedIdentity(makeIdentity(repeat each id)), values: values, body: .task(action)
        )
    }

    /// Declares `identity` for the task `name` of `key`: applied at once on the loop thread,
    /// posted from any other. `template`: the `TaskTemplate` declared, if any (its options are
    /// then found by identity).
    @inlinable
    func declare<Identity: DeclaredIdentity>(
        _ key: Key, name: TaskName, identity: Identity, values: TaskOptions.Values, body: RunBody,
        template: AnyObject? = nil
    ) throws(RegistryError) {
        if core.unretainedLoop.inLoop {
            guard !core.isShutDown else { throw .shutDown }
            #if Tracing
                if let spans = core.runSpans {
                    applyTraced(key, name, identity, values, body, template, context: ServiceContext.current, spans)
                    return
                }
            #endif
            apply(key, name: name, identity: identity, values: values, body: body, template: template)
        } else {
            try postDeclaration(key, name, identity.erased, values, body)
        }
    }

    /// `declare` from another thread: the declaration is posted to the loop. Out of line, so
    /// that the loop thread's path does not make room for, nor copy its identity into, a posted
    /// operation (about 20 instructions a W1 change).
    @usableFromInline @inline(never)
    func postDeclaration(
        _ key: Key, _ name: TaskName, _ identity: any Hashable & Sendable, _ values: TaskOptions.Values,
        _ body: RunBody
    ) throws(RegistryError) {
        #if Tracing
            // Captured here, in the declaring task: on the loop it is gone.
            if core.runSpans != nil, let context = ServiceContext.current {
                try post(.declareTraced(key, name, identity, values, body, context), limited: true)
                return
            }
        #endif
        // Shutdown applies what was posted before it, so this always finds it running.
        try post(.declare(key, name, identity, values, body), limited: true)
    }

    #if Tracing
        /// `apply`, with the trace context of the task that declared it (trait `Tracing`): the
        /// parent of its run's span. Loop thread only.
        @usableFromInline
        func applyTraced<Identity: DeclaredIdentity>(
            _ key: Key, _ name: TaskName, _ identity: Identity, _ values: TaskOptions.Values,
            _ body: RunBody, _ template: AnyObject?, context: ServiceContext?, _ spans: RunSpans
        ) {
            spans.declarationContext = context
            apply(key, name: name, identity: identity, values: values, body: body, template: template)
            spans.declarationContext = nil
        }
    #endif

    /// Applies one declaration on the loop thread: finds or makes the record and its options,
    /// compares `identity` with the record's, and hands the declaration to the core.
    @inlinable
    func apply<Identity: DeclaredIdentity>(
        _ key: Key, name: TaskName, identity: Identity, values: TaskOptions.Values,
        body: RunBody, observed: Bool = false, template: AnyObject? = nil
    ) {
        // A declaration with an explicit identity replaces an observed one: its tracking ends.
        if !observations.isEmpty && !observed { stopObserving(ObserverKey(key: key, name: name)) }
        // One hash for the look-up and, for a new task, its insertion.
        let hash = key.hashValue
        let existing = slots.record(for: key, name: name, hash: hash)
        let options: TaskOptions
        if let existing,
            (template != nil && existing.options.template === template) || existing.options.values == values
        {
            options = existing.options
        } else {
            do {
                options = try core.options(for: values, template: template)
            } catch {
                // Only a loop that is shutting down refuses a timer; the registry goes with it.
                core.logDebug("declaration of task '\(name)' dropped: the loop refused a timer (\(error))")
                return
            }
        }
        if let existing {
            // One test on the common path; the policies that decide first, out of line (inline,
            // their tests kept this function from being inlined: 65 instructions a W2 change).
            if _slowPath(values.policy.decidesBeforeComparing) {
                applyDecidingFirst(existing, identity: identity, options: options, body: body)
            } else if identity.equals(existing.identity) {
                core.declareSame(existing, options: options, body: body)
            } else {
                core.declareChanged(existing, identity: identity.erased, options: options, body: body)
            }
            return
        }
        let record = TaskRecord(key: key, name: name, registry: self, options: options)
        if !removedRunning.isEmpty, let previous = removedRunning.removeValue(forKey: ObserverKey(key: key, name: name))
        {
            core.inherit(record, endingRunsOf: previous)
        }
        if slots.insert(record, hash: hash) { core.slotAdded() }
        if !phaseStreams.observers.isEmpty {
            record.hasObservers = phaseStreams.observers[ObserverKey(key: key, name: name)] != nil
        }
        core.declareChanged(record, identity: identity.erased, options: options, body: body)
    }

    @inlinable
    func record(_ key: Key, _ name: TaskName) -> TaskRecord<Key>? {
        slots.record(for: key, name: name)
    }

    /// `apply` for an existing task under `keepRunningDropNew` or `appendInOrder`: the core
    /// may drop the new identity, or queue it behind the others, before it becomes a generation.
    @usableFromInline @inline(never)
    func applyDecidingFirst<Identity: DeclaredIdentity>(
        _ existing: TaskRecord<Key>, identity: Identity, options: TaskOptions, body: RunBody
    ) {
        if options.values.policy == .appendInOrder,
            core.appendsDeclaration(existing, identity: identity.erased, options: options, body: body)
        {
            return
        }
        if identity.equals(existing.identity) {
            core.declareSame(existing, options: options, body: body)
        } else if !(options.values.policy == .keepRunningDropNew && core.dropsDeclaration(existing)) {
            core.declareChanged(existing, identity: identity.erased, options: options, body: body)
        }
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

    @usableFromInline
    func applyRemove(_ key: Key, reason: CancellationReason) {
        // A slot followed from a sequence whose first element has not come has no record yet.
        if !identityStreams.isEmpty { stopFollowing(slot: key) }
        guard let first = slots.removeSlot(key) else { return }
        cancelRemovedSlot(first, reason: reason)
    }

    /// Cancels every task of a slot just taken out of the slot table, from its first record.
    @usableFromInline
    func cancelRemovedSlot(_ first: TaskRecord<Key>, reason: CancellationReason) {
        let key = first.key
        core.slotRemoved()
        var next: TaskRecord<Key>? = first
        while let record = next {
            if !observations.isEmpty { stopObserving(ObserverKey(key: key, name: record.name)) }
            core.remove(record, reason: reason)
            if record.state.endingRuns > 0 && reason == .removed {
                removedRunning[ObserverKey(key: key, name: record.name)] = record
            }
            // Unlinked as it goes: a record whose runs outlive it must not keep the slot's
            // later records alive.
            next = record.nextInBucket
            record.nextInBucket = nil
        }
    }

    /// The removed task `record` has no run left: a re-declared task has nothing to wait for.
    func forgetRemoved(_ record: TaskRecord<Key>) {
        let observerKey = ObserverKey(key: record.key, name: record.name)
        if removedRunning[observerKey] === record { removedRunning[observerKey] = nil }
    }
}
