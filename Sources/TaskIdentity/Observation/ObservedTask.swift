import TaskLoopCore

/// The action of an observed task: the identity its closure computed, typed, and the run's
/// context. Runs like a `TaskAction`; its reads of observable state are not tracked.
public typealias ObservedTaskAction<ID> = nonisolated(nonsending) @Sendable (ID, TaskContext) async throws -> Void

extension TaskRegistry {
    /// Declares the task `name` of slot `key` with an identity **derived from observable
    /// state**: `identity` is evaluated now, with Observation tracking the `@Observable`
    /// properties it reads, and its value is the task's identity. When any of those properties
    /// changes, on any thread, `identity` is evaluated again on the loop (every write in one
    /// loop turn coalesces into one evaluation): an equal value does nothing, a different one
    /// restarts the task exactly as `task(_:id:…)` with that value would, options included.
    ///
    /// ```swift
    /// try registry.task("avatar", tracking: { model.baseURL.appending(path: model.path) }) { url, context in
    ///     let image = try await fetchImage(url)
    ///     context.commit { model.image = image }
    /// }
    /// ```
    ///
    /// - By default (Observation's public interface, which reports a write before its store),
    ///   the re-evaluation reads a write made on the loop thread after its store; a write made
    ///   on another thread may be read before it is stored, and is then seen only with the next
    ///   write of a property the identity reads. With the `ObservationSPI` trait (the
    ///   underscored `didSet` interface) it reads every write after its store, from any thread.
    /// - Only `identity` is tracked. The action's reads and writes never are, and properties
    ///   marked `@ObservationIgnored` are not tracked inside `identity` either: caches the
    ///   action keeps restart nothing.
    /// - A task that must run once per slot lifetime (a `for await` loop) is declared without
    ///   an identity, with `task(_:name:…)`: it is never tracked, whatever it reads.
    /// - A run's writes (its action, its commits, its child tasks, and `identity` itself while
    ///   it evaluates) are known to be its own. A re-evaluation they cause belongs to a chain
    ///   one run longer; a chain of more than `maxObservationDepth` caused runs is stopped: the
    ///   task fails with `ObservationCycleError` instead of restarting, its tracking ends (it
    ///   stays failed until declared again), and `RegistryCounters.observationCyclesStopped`
    ///   counts it. The first write after an
    ///   evaluation decides the cause of the next one.
    /// - Tracking ends when the slot is removed, when the task is declared again with an
    ///   explicit `id` (or no id), at shutdown, and when the registry is released. Declaring
    ///   it again with `tracking:` replaces the closure, the options and the action, and
    ///   evaluates the new closure at once. Observation cannot withdraw a subscription: one
    ///   that tracking left behind stays in the models it read until one of those properties is
    ///   next written, holding a few hundred bytes and nothing of the task.
    /// - `identity` is called twice per evaluation (once tracked, once after the subscription
    ///   is installed, to see a write made in between), so it must be a function of the state
    ///   it reads, without side effects. Declared inside another identity closure, an observed
    ///   task's reads are tracked by the outer one too (Observation nests tracking).
    /// - The registry keeps `identity` and `action` as long as tracking lasts: a closure that
    ///   captures the registry strongly keeps it alive until the slot is removed or the registry
    ///   shut down.
    ///
    /// Threading: `identity` runs on the loop thread, always: the state it reads must be
    /// confined to the loop (created and written there, reached from elsewhere through
    /// `LoopBound`), or synchronized so that a read on the loop thread is safe. Writes from
    /// other threads are seen once they are stored (Observation reports them after the store).
    ///
    /// - Parameters:
    ///   - key: the slot.
    ///   - name: which of the slot's tasks (default `.main`).
    ///   - identity: computes the identity, synchronously, on the loop thread.
    ///   - priority: as for `task(_:name:id:…)`.
    ///   - debounce: as for `task(_:name:id:…)`.
    ///   - maxWait: as for `task(_:name:id:…)`.
    ///   - throttle: as for `task(_:name:id:…)`.
    ///   - policy: as for `task(_:name:id:…)`.
    ///   - progressDelay: as for `task(_:name:id:…)`.
    ///   - timeout: as for `task(_:name:id:…)`.
    ///   - limit: as for `task(_:name:id:…)`.
    ///   - retry: as for `task(_:name:id:…)`.
    ///   - staleAfter: as for `task(_:name:id:…)`.
    ///   - refreshEvery: as for `task(_:name:id:…)`.
    ///   - executor: as for `task(_:name:id:…)`.
    ///   - action: the work, given the identity's value and the run's context.
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread; `.shutDown` after
    ///   shutdown; `.invalidDuration` for a negative duration or a `timeout` under a nanosecond.
    /// - Note: Loop thread only: `identity` captures loop-confined state.
    public func task<ID: Hashable & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        tracking identity: @escaping () -> ID,
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
        action: @escaping ObservedTaskAction<ID>
    ) throws(RegistryError) {
        let values = try TaskOptions.Values(
            priority: priority, policy: policy, debounce: debounce, maxWait: maxWait, throttle: throttle,
            progressDelay: progressDelay,
            timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter, refreshEvery: refreshEvery,
            executor: executor)
        try observe(key, name: name, values: values, identity: identity) { id, run in
            .task({ context in
                try await ObservedRun.$current.withValue(run) { try await action(id, context) }
            })
        }
    }

    /// Declares the task of `template` in slot `key` with an identity derived from observable
    /// state, exactly as `task(_:name:tracking:…:action:)` with the template's name, options
    /// and action. The action reads the identity with `context.id(as: ID.self)`.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread; `.shutDown` after
    ///   shutdown.
    /// - Note: Loop thread only: `identity` captures loop-confined state.
    public func task<ID: Hashable & Sendable>(
        _ key: Key, tracking identity: @escaping () -> ID, template: TaskTemplate<Key>
    ) throws(RegistryError) {
        let body = template.body
        try observe(key, name: template.name, values: template.values, identity: identity) { _, run in
            switch body {
            case .task(let action):
                return .task({ context in
                    try await ObservedRun.$current.withValue(run) { try await action(context) }
                })
            case .keyedTask(let keyed):
                let action = KeyedAction<Key>.of(keyed).action
                return .task({ context in
                    try await ObservedRun.$current.withValue(run) { try await action(key, context) }
                })
            case .synchronous(let action):
                // A task-local binding, not `SynchronousCause`: a task the action creates inherits
                // it. (Not on the hot path: the thread word is for identity evaluations.)
                return .synchronous({ context in try ObservedRun.$current.withValue(run) { try action(context) } })
            }
        }
    }

    private func observe<ID: Hashable & Sendable>(
        _ key: Key, name: TaskName, values: TaskOptions.Values, identity: @escaping () -> ID,
        makeBody: @escaping (ID, ObservedRun) -> RunBody
    ) throws(RegistryError) {
        guard loop.inLoop else { throw .calledOffLoopThread }
        guard !core.isShutDown else { throw .shutDown }
        let observerKey = ObserverKey(key: key, name: name)
        stopObserving(observerKey)
        let tracker = IdentityTracker(
            registry: self, key: key, name: name, values: values, identity: identity, makeBody: makeBody)
        observations[observerKey] = tracker
        // Declared inside an observed run (its action re-declaring a task, say), the first
        // evaluation is a step of that run's chain.
        tracker.evaluate(cause: ObservedRun.causeHere)
    }

    /// Ends the tracking of the task `observerKey`, if it is observed. Loop thread only.
    @usableFromInline
    func stopObserving(_ observerKey: ObserverKey) {
        observations.removeValue(forKey: observerKey)?.stop()
    }

    /// The record of `tracker`'s task, if it is declared (from the tracker's cache when it is
    /// still in its slot). Loop thread only.
    func observedRecord<ID>(_ tracker: IdentityTracker<Key, ID>) -> TaskRecord<Key>? {
        if let cached = tracker.record, !cached.state.isRemoved { return cached }
        tracker.record = record(tracker.key, tracker.name)
        return tracker.record
    }

    /// Declares `value`, just computed by `tracker`, whose run would be `run` (its depth and
    /// the chain that led to it), unless that chain is too long. `existing`: the task's record,
    /// if declared. Loop thread only.
    func applyObserved<ID>(
        _ tracker: IdentityTracker<Key, ID>, value: ID, run: ObservedRun, existing: TaskRecord<Key>?
    ) {
        core.tally { $0.identityEvaluations &+= 1 }
        guard let existing else {
            apply(
                tracker.key, name: tracker.name, identity: ErasedIdentity(value), values: tracker.values,
                body: tracker.makeBody(value, run), observed: true)
            return
        }
        let stale = core.mayHaveRareState && core.isStale(existing, existing.options)
        let same = identitiesEqual(existing.identity, value)
        guard stale || !same else {
            // Counted as an unchanged declaration; no run body is made for it.
            core.declareSame(existing, options: existing.options, body: unchangedBody)
            return
        }
        guard run.depth <= maxObservationDepth else {
            stopCycle(tracker, value: value, run: run)
            return
        }
        let options: TaskOptions
        if existing.options.values == tracker.values {
            options = existing.options
        } else {
            do {
                options = try core.options(for: tracker.values)
            } catch {
                return  // only a loop that is shutting down refuses a timer; the registry goes with it
            }
        }
        // An equal identity, stale under the task's options so far: the core decides again under
        // the options declared now, as for `task(_:id:…)`.
        if tracker.values.policy == .appendInOrder,
            core.appendsDeclaration(existing, identity: value, options: options, body: tracker.makeBody(value, run))
        {
            return
        }
        if same {
            core.declareSame(existing, options: options, body: tracker.makeBody(value, run))
        } else if tracker.values.policy == .keepRunningDropNew && core.dropsDeclaration(existing) {
            return  // the task keeps what it has, as for `task(_:id:…)`
        } else {
            core.declareChanged(existing, identity: value, options: options, body: tracker.makeBody(value, run))
        }
        core.trace(existing, existing.generation, .observedChange(writer: run.parent.map(TraceEvent.Writer.init)))
    }

    /// Ends `tracker`'s tracking and declares `value` as a generation (`run`'s) that fails
    /// with `ObservationCycleError` instead of running its action: the previous run is
    /// cancelled, and nothing of the chain runs on. Loop thread only.
    func stopCycle<ID>(_ tracker: IdentityTracker<Key, ID>, value: ID, run: ObservedRun) {
        core.tally { $0.observationCyclesStopped &+= 1 }
        stopObserving(ObserverKey(key: tracker.key, name: tracker.name))
        let error = ObservationCycleError(chain: run.chain, limit: maxObservationDepth)
        // At once, whatever the task's debounce, throttle or policy: the failure is the news.
        declareFailure(
            tracker.key, name: tracker.name, values: tracker.values, error: error, observed: true, identity: value)
        if let record = record(tracker.key, tracker.name) { core.trace(record, record.generation, .cycleStopped) }
    }
}

/// The body passed with an unchanged observed identity: never run (the declaration is
/// unchanged), and shared, so that an evaluation with an equal value allocates nothing.
private let unchangedBody = RunBody.synchronous({ _ in })
