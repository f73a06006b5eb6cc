import TaskLoopCore

/// A `TaskTemplate` whose identity has one type, `ID`, that its action receives typed: no
/// `context.id(as:)` cast, and declaring it with an identity of another type does not compile.
///
/// ```swift
/// let search = try TypedTaskTemplate<SessionID, String>(debounce: .milliseconds(250)) {
///     session, query, context in
///     let results = try await backend.search(query)
///     context.commit { sessions[session]?.show(results) }
/// }
/// try registry.task(session, id: query, template: search)   // `query` must be a String
/// ```
///
/// Immutable and `Sendable`; may be made and used on any thread, with any registry of its key type.
public final class TypedTaskTemplate<Key: Hashable & Sendable, ID: Hashable & Sendable>: Sendable {
    /// The untyped template that declarations go through. Not public: the typed `task` below
    /// is the only way in, so its runs' identities are always `ID`s.
    @usableFromInline let template: TaskTemplate<Key>

    private init(template: TaskTemplate<Key>) {
        self.template = template
    }

    /// Makes a template; the parameters mean what they mean for `TaskTemplate.init`.
    ///
    /// - Parameters:
    ///   - name: which of a slot's tasks the template declares (default `.main`).
    ///   - priority: the Swift task priority of the action.
    ///   - debounce: start only once no new identity has arrived for this long.
    ///   - maxWait: close a debounce window that keeps re-opening at most this long after it
    ///     first opened (nil: never); the run then has the latest identity.
    ///   - throttle: start at most once per window.
    ///   - policy: what a new identity does to a run still in progress.
    ///   - progressDelay: turn the run's progress signal on only if it is still running after
    ///     this long (nil: never).
    ///   - timeout: each run's time limit, from its start (nil: none).
    ///   - limit: the concurrency limit its runs count against (nil: the registry's, if any).
    ///   - retry: how a run that fails is tried again (nil: it is not; see `RetryPolicy`).
    ///   - staleAfter: how long a run's outcome stays fresh (nil: forever; see `TaskRegistry.task(…)`).
    ///   - refreshEvery: run the current identity again this long after each run ends (nil: never).
    ///   - sharesRuns: slots declaring equal identities share one run (see `TaskTemplate.init`).
    ///   - executor: where the action runs (default: the registry's loop).
    ///   - action: the work, given the slot's key, the identity and the run's context.
    /// - Throws: `RegistryError.invalidDuration` for a negative duration or a `timeout` under a nanosecond.
    /// - Note: May be called from any thread.
    public convenience init(
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
        action: nonisolated(nonsending) @escaping @Sendable (Key, ID, TaskContext) async throws -> Void
    ) throws(RegistryError) {
        let template = try TaskTemplate<Key>(
            name: name, priority: priority, debounce: debounce, maxWait: maxWait, throttle: throttle, policy: policy,
            progressDelay: progressDelay, timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter,
            refreshEvery: refreshEvery, sharesRuns: sharesRuns, executor: executor
        ) { key, context in
            // Every declaration through this template stores an `ID` (the only way in is
            // `task(_:id:template:)` below, typed, and `template` is not public), so the cast
            // cannot fail.
            try await action(key, context.id as! ID, context)
        }
        self.init(template: template)
    }

    /// Makes a template whose runs need no Swift task; see `TaskTemplate.synchronous`.
    ///
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
        action: @escaping @Sendable (Key, ID, TaskContext) throws -> Void
    ) throws(RegistryError) -> TypedTaskTemplate<Key, ID> {
        let template = try TaskTemplate<Key>.synchronous(
            name: name, debounce: debounce, maxWait: maxWait, throttle: throttle, policy: policy,
            progressDelay: progressDelay,
            timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter, refreshEvery: refreshEvery,
            after: delay
        ) { key, context in
            try action(key, context.id as! ID, context)  // typed on the way in, as above
        }
        return TypedTaskTemplate(template: template)
    }
}

extension TaskRegistry {
    /// Declares the task of `template` in slot `key` with identity `id`, as
    /// `task(_:id:template:)`; the action receives `id` typed.
    ///
    /// - Throws: as `task(_:name:id:…)`.
    /// - Note: May be called from any thread, and never blocks it; on the loop thread it acts
    ///   at once.
    @inlinable
    public func task<ID>(_ key: Key, id: ID, template: TypedTaskTemplate<Key, ID>) throws(RegistryError) {
        try declare(
            key, name: template.template.name, identity: TypedIdentity(id), values: template.template.values,
            body: template.template.body, template: template.template)
    }
}
