import TaskLoopCore

/// A task's action and options, made once and used for many declarations. A declaration through
/// a template passes only the key and the identity: no closure is allocated per change, and the
/// action receives the slot's key.
///
/// ```swift
/// let search = try TaskTemplate<SessionID>(debounce: .milliseconds(250)) { session, context in
///     let query = context.id(as: String.self)!
///     let results = try await backend.search(query)
///     context.commit { sessions[session]?.show(results) }
/// }
/// try registry.task(session, id: query, template: search)   // per keystroke: no allocation
/// ```
///
/// Immutable and `Sendable`; may be made and used on any thread, with any registry of its key type.
public final class TaskTemplate<Key: Hashable & Sendable>: Sendable {
    @usableFromInline let name: TaskName
    @usableFromInline let values: TaskOptions.Values
    @usableFromInline let body: RunBody

    /// Makes a template; the parameters mean what they mean for `TaskRegistry.task(…)`,
    /// `executor` included: a template for work that computes can run its actions on
    /// `.global`, off the loop.
    ///
    /// - Parameters:
    ///   - name: which of a slot's tasks the template declares (default `.main`).
    ///   - priority: the Swift task priority of the action.
    ///   - debounce: start only once no new identity has arrived for this long.
    ///   - maxWait: close a debounce window that keeps re-opening at most this long after it
    ///     first opened (nil: never); the run then has the latest identity.
    ///   - throttle: start at most once per window; the latest identity starts when it closes.
    ///   - policy: what a new identity does to a run still in progress.
    ///   - progressDelay: turn the run's progress signal on only after this long.
    ///   - timeout: each run's time limit, from its start (nil: none).
    ///   - limit: the concurrency limit its runs count against (nil: the registry's, if any).
    ///   - retry: how a run that fails is tried again (nil: it is not; see `RetryPolicy`).
    ///   - staleAfter: how long a run's outcome stays fresh (nil: forever; see `TaskRegistry.task(…)`).
    ///   - refreshEvery: run the current identity again this long after each run ends (nil: never).
    ///   - sharesRuns: a slot that declares an identity equal (`==`) to one this template is
    ///     running for another slot joins that run instead of starting its own: the action is
    ///     called once, with the key of the slot that started the run, and every slot in the
    ///     run gets its end (`finished`, `failed`) and its stored result
    ///     (`commit(result:)`) as if the run were its own; `commit { }` runs its body once
    ///     while any slot in the run is current (`context.keys(as:)` lists them). A slot that
    ///     moves on leaves the run, which is cancelled only when the last slot has left. Each
    ///     slot's phase stays its own. A joining slot takes no place of a concurrency limit.
    ///     Only declarations with an `id:` share, within one registry (one shard). Default false.
    ///   - executor: where the action runs (see `ActionExecutor`).
    ///   - action: the work, given the slot's key and the run's context.
    /// - Throws: `RegistryError.invalidDuration` for a negative duration or a `timeout` under a nanosecond.
    /// - Note: May be called from any thread.
    public init(
        name: TaskName = .main,
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
        sharesRuns: Bool = false,
        executor: ActionExecutor = TaskOptionDefaults.executor,
        action: nonisolated(nonsending) @escaping @Sendable (Key, TaskContext) async throws -> Void
    ) throws(RegistryError) {
        self.name = name
        self.values = try TaskOptions.Values(
            priority: priority, policy: policy, debounce: debounce, maxWait: maxWait, throttle: throttle,
            progressDelay: progressDelay,
            timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter, refreshEvery: refreshEvery,
            sharesRuns: sharesRuns,
            executor: executor)
        // The run's task calls the action with its own record's key.
        self.body = .keyedTask(KeyedAction<Key>(action))
    }

    private init(name: TaskName, values: TaskOptions.Values, body: RunBody) {
        self.name = name
        self.values = values
        self.body = body
    }

    /// Makes a template whose runs need no Swift task: `action` is called synchronously on
    /// the registry's loop thread, either as soon as the run starts or, with `after`, once the
    /// run has been `running` that long on the loop's timer. Everything else is a task's:
    /// identities, restarts, debounce, throttle, policies, generations, `commit`, phases,
    /// progress and counters. Cancelling such a run (a new id, `remove`, shutdown) ends it at
    /// once, phase `cancelled`, and its action is not called afterwards (an action that
    /// cancels its own run is already running: it finishes, and its commits are dropped).
    ///
    /// For work that does not suspend, or that is "this, after that long": a start costs a
    /// few hundred nanoseconds instead of a Swift task's creation, scheduling and teardown.
    ///
    /// ```swift
    /// // Publish a session's presence only once it has held still for 2 s.
    /// let publish = try TaskTemplate<SessionID>.synchronous(after: .seconds(2)) { session, context in
    ///     context.commit { presence[session] = context.id(as: Status.self) }
    /// }
    /// try registry.task(session, id: status, template: publish)
    /// ```
    ///
    /// - Parameters:
    ///   - name: which of a slot's tasks the template declares (default `.main`).
    ///   - debounce: as for `TaskRegistry.task(…)`.
    ///   - maxWait: as for `TaskRegistry.task(…)`.
    ///   - throttle: as for `TaskRegistry.task(…)`.
    ///   - policy: as for `TaskRegistry.task(…)`.
    ///   - progressDelay: as for `TaskRegistry.task(…)`.
    ///   - timeout: a time limit from the run's start: a run whose action has not been called
    ///     when it passes is cancelled (`cancelled(.timedOut)`), and its action is never
    ///     called. An action that has been called holds the loop until it returns, so a limit
    ///     of at least `after:` never fires. nil (the default): no limit.
    ///   - limit: as for `TaskRegistry.task(…)`; a run holds its place from its start until
    ///     its action returns, or until it is cancelled before its action is called.
    ///   - retry: as for `TaskRegistry.task(…)`: an action that throws is called again after
    ///     the policy's wait (and its `after:` delay again).
    ///   - staleAfter: as for `TaskRegistry.task(…)`.
    ///   - refreshEvery: as for `TaskRegistry.task(…)`.
    ///   - delay: (`after:`) how long the run stays `running` before `action` is called
    ///     (zero: at once).
    ///   - action: called on the loop thread with the slot's key and the run's context. It must
    ///     not block: the loop waits for it. If it throws, the run ends `failed` (or
    ///     `cancelled`, for a `CancellationError`).
    /// - Throws: `RegistryError.invalidDuration` for a negative duration or a `timeout` under a nanosecond.
    /// - Note: May be called from any thread.
    public static func synchronous(
        name: TaskName = .main,
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
        after delay: Duration = TaskOptionDefaults.synchronousDelay,
        action: @escaping @Sendable (Key, TaskContext) throws -> Void
    ) throws(RegistryError) -> TaskTemplate<Key> {
        let values = try TaskOptions.Values(
            priority: TaskOptionDefaults.priority, policy: policy, debounce: debounce, maxWait: maxWait,
            throttle: throttle,
            progressDelay: progressDelay, timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter,
            refreshEvery: refreshEvery, synchronousDelay: delay)
        return TaskTemplate(
            name: name, values: values,
            body: .synchronous({ context in
                // A checked cast: a TaskTemplate<Key> is declared only on a TaskRegistry<Key> (the
                // types say so), so its runs are TaskRecord<Key>s.
                guard let record = context.run as? TaskRecord<Key> else {
                    preconditionFailure(
                        "BUG DETECTED: a TaskTemplate<\(Key.self)>'s run in a registry of another key type")
                }
                try action(record.key, context)
            }))
    }
}

extension TaskRegistry {
    /// Declares the task of `template` in slot `key` with identity `id`, exactly as
    /// `task(_:name:id:…:action:)` with the template's name, options and action, but without
    /// allocating per call.
    ///
    /// - Throws: `RegistryError.shutDown` after shutdown.
    /// - Note: May be called from any thread; on the loop thread it acts at once.
    @inlinable
    public func task<each ID: Hashable & Sendable>(
        _ key: Key, id: repeat each ID, template: TaskTemplate<Key>
    ) throws(RegistryError) {
        try declare(
            key, name: template.name, identity: ErasedIdentity(makeIdentity(repeat each id)), values: template.values,
            body: template.body, template: template)
    }

    /// `task(_:id:template:)` for one identity value, chosen by the compiler when one value is
    /// given here (a `ShardedTaskRegistry` forwards its values to the variadic form): the value
    /// keeps its type through the declaration and is compared with its own `==`. The same as
    /// the variadic form in every other way. (Swift does not specialize a call made with one
    /// element of a parameter pack, so the variadic form cannot do this.)
    ///
    /// - Throws: `RegistryError.shutDown` after shutdown.
    /// - Note: May be called from any thread; on the loop thread it acts at once.
    @inlinable
    public func task<ID: Hashable & Sendable>(_ key: Key, id: ID, template: TaskTemplate<Key>) throws(RegistryError) {
        try declare(
            key, name: template.name, identity: TypedIdentity(id), values: template.values, body: template.body,
            template: template)
    }
}

extension TaskContext {
    /// The key of the slot this run belongs to, as `type` (nil if the key is of another type).
    ///
    /// - Note: May be called from any thread.
    public func key<Key: Hashable & Sendable>(as type: Key.Type) -> Key? {
        (run as? TaskRecord<Key>)?.key
    }
}
