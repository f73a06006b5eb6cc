import TaskLoopCore

/// What a task driven by a sequence of identities (`task(_:identities:…)`) does when its
/// sequence finishes without an error.
///
/// A value: may be made and passed on any thread.
public enum IdentitiesEnd: Sendable, Hashable {
    /// Remove the slot, as `remove(key)` would: every task it hosts is cancelled (phase
    /// `cancelled(.removed)`). The default: the stream was the slot's life.
    case removeSlot
    /// Leave the task as it is: its last run goes on to its end, and its phase stays readable.
    case keepLastRun
}

extension TaskRegistry {
    /// Declares the task `name` of slot `key` once for **each element of `identities`**, in
    /// order, with that element as its identity: Kotlin's `collectLatest` or Rx's `switchMap`,
    /// per key, with every option of `task(_:id:…)` (debounce, policies, limits, phases).
    ///
    /// ```swift
    /// let (queries, input) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
    /// try registry.task(session, identities: queries, debounce: .milliseconds(250)) { query, context in
    ///     let hits = try await search(query)
    ///     context.commit { show(hits) }
    /// }
    /// input.yield("swi")   // from anywhere: each element is a declaration
    /// ```
    ///
    /// - One Swift task per call consumes the sequence, on the registry's loop (task executor
    ///   preference), not one per element. It takes an element, declares it (at once: it is on
    ///   the loop thread), and only then asks for the next one, so that the sequence's own
    ///   buffering decides what happens when elements come faster than the loop takes them.
    ///   An `AsyncStream` made with `.bufferingNewest(1)` keeps only the latest element waiting
    ///   (the ones it drops are never declared); with the default unbounded buffering, every
    ///   element is declared, in order, and the ones declared in the same loop turn coalesce
    ///   as declarations do: only the last of them starts a run.
    /// - The sequence finishing ends the task as `whenFinished` says: the slot is removed (the
    ///   default) or the last run is kept.
    /// - The sequence throwing ends the task with that error: its current run is cancelled
    ///   and its phase becomes `failed(error)`, at once, whatever its options.
    /// - The consumption stops (its task is cancelled, so that an `AsyncStream`'s
    ///   `onTermination` is called) when the slot is removed, when the same task is declared
    ///   again with `identities:`, at shutdown, and when the registry is released. A declaration
    ///   with an explicit `id` in between is applied like any other, and the stream's next
    ///   element replaces it.
    /// - Nothing is declared before the first element: the task has no phase until then.
    ///
    /// Threading: may be called from any thread, and never blocks it. On the loop thread the
    /// consumption is in place when the call returns (a `remove(key)` right after it stops it);
    /// from another thread it is posted, in order with the caller's other posted calls.
    ///
    /// - Parameters:
    ///   - key: the slot.
    ///   - name: which of the slot's tasks (default `.main`).
    ///   - identities: the sequence; each element is an identity (a `Hashable & Sendable`
    ///     value). Swift 6.2's `Observations { model.query }` fits, as do NIO channel inbound
    ///     streams and `AsyncStream`s.
    ///   - whenFinished: what the sequence's end does (`.removeSlot` by default).
    ///   - priority: as in `task(_:id:…)`, for every element's run.
    ///   - debounce: as in `task(_:id:…)`: a burst of elements runs only its last.
    ///   - maxWait: as in `task(_:id:…)`.
    ///   - throttle: as in `task(_:id:…)`.
    ///   - policy: as in `task(_:id:…)`: what a new element does to a run still in progress.
    ///   - progressDelay: as in `task(_:id:…)`.
    ///   - timeout: as in `task(_:id:…)`.
    ///   - limit: as in `task(_:id:…)`.
    ///   - retry: as in `task(_:id:…)`.
    ///   - staleAfter: as in `task(_:id:…)`.
    ///   - refreshEvery: as in `task(_:id:…)`.
    ///   - executor: as in `task(_:id:…)`.
    ///   - action: the work of each run, given the element that is its identity.
    /// - Throws: as `task(_:id:…)`: `RegistryError.shutDown` after shutdown, `.invalidDuration`,
    ///   `.loopNotStarted` and `.overloaded` from another thread. Errors of later declarations
    ///   (the registry shut down meanwhile) end the consumption.
    public func task<Identities: AsyncSequence & Sendable>(
        _ key: Key,
        name: TaskName = .main,
        identities: Identities,
        whenFinished: IdentitiesEnd = .removeSlot,
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
        action: @escaping ObservedTaskAction<Identities.Element>
    ) throws(RegistryError) where Identities.Element: Hashable & Sendable {
        let values = try TaskOptions.Values(
            priority: priority, policy: policy, debounce: debounce, maxWait: maxWait, throttle: throttle,
            progressDelay: progressDelay, timeout: timeout, limit: limit, retry: retry, staleAfter: staleAfter,
            refreshEvery: refreshEvery, executor: executor)
        // One body for every element: the run reads its element back as its identity.
        let body = RunBody.task({ context in
            guard let element = context.id as? Identities.Element else {
                preconditionFailure("BUG DETECTED: a run declared from identities: without its element as identity")
            }
            try await action(element, context)
        })
        let consumer = IdentityStreamConsumer(
            key: ObserverKey(key: key, name: name), whenFinished: whenFinished, values: values, body: body)
        let start: @Sendable (TaskRegistry<Key>) -> Void = { registry in
            registry.follow(consumer, identities)
        }
        if loop.inLoop {
            guard !core.isShutDown else { throw .shutDown }
            start(self)
        } else {
            try post(.followIdentities(start), limited: true)
        }
    }

    /// Starts `consumer`'s task over `identities`, replacing any consumption of the same task.
    /// Loop thread only.
    func follow<Identities: AsyncSequence & Sendable>(_ consumer: IdentityStreamConsumer<Key>, _ identities: Identities)
    where Identities.Element: Hashable & Sendable {
        guard !core.isShutDown else { return }
        let key = consumer.key
        stopFollowing(key)
        identityStreams[key.key, default: [:]][key.name] = consumer
        consumer.task = Task(executorPreference: loop) { [weak self] in
            var failure: (any Error)?
            do {
                for try await element in identities {
                    guard let self, !Task.isCancelled else { return }
                    guard await self.declareStreamed(element, of: consumer) else { return }
                }
            } catch {
                failure = error
            }
            self?.streamEnded(consumer, failure: failure)
        }
    }

    /// Declares one element of `consumer`'s sequence, on the loop (the consumer's task prefers
    /// it; posted if an executor ever resumes it elsewhere). Returns false when the registry
    /// refuses it for good (shut down): the consumption ends, and nothing more is declared.
    private func declareStreamed<Element: Hashable & Sendable>(
        _ element: Element, of consumer: IdentityStreamConsumer<Key>
    ) async -> Bool {
        let key = consumer.key
        while true {
            do {
                try declare(
                    key.key, name: key.name, identity: ErasedIdentity(element), values: consumer.values,
                    body: consumer.body)
                return true
            } catch {
                // Posted from another thread past `postedCallLimit`: wait for the loop, then
                // declare again, as any caller should (the element is not lost).
                guard error.code == .overloaded else { return false }
                await flush()
            }
        }
    }

    /// `consumer`'s sequence finished (`failure` nil), threw, or its task was cancelled: unless
    /// the consumption was stopped meanwhile, the task ends as its caller chose. Runs on the
    /// loop (posted there if the consumer's task resumed elsewhere).
    private func streamEnded(_ consumer: IdentityStreamConsumer<Key>, failure: (any Error)?) {
        guard loop.inLoop else {
            try? loop.execute { [self] in self.streamEnded(consumer, failure: failure) }
            return
        }
        let key = consumer.key
        // Stopped (removed, replaced, shut down): nothing of the task is this stream's now.
        guard identityStreams[key.key]?[key.name] === consumer, !core.isShutDown else { return }
        stopFollowing(key)
        if let failure {
            declareFailure(key.key, name: key.name, values: consumer.values, error: failure, observed: false)
        } else if consumer.whenFinished == .removeSlot {
            applyRemove(key.key, reason: .removed)
        }
    }

    /// Stops the consumption of the task `key`'s sequence, if any: its task is cancelled. Loop
    /// thread only.
    func stopFollowing(_ key: ObserverKey) {
        guard let consumer = identityStreams[key.key]?.removeValue(forKey: key.name) else { return }
        if identityStreams[key.key]?.isEmpty == true { identityStreams[key.key] = nil }
        consumer.task?.cancel()
    }

    /// Stops the consumption of every task of slot `key` followed from a sequence. Loop thread only.
    func stopFollowing(slot key: Key) {
        guard let consumers = identityStreams.removeValue(forKey: key) else { return }
        for consumer in consumers.values { consumer.task?.cancel() }
    }

    /// Stops every consumption (shutdown, release). Loop thread only.
    func stopFollowingAll() {
        for consumers in identityStreams.values { for consumer in consumers.values { consumer.task?.cancel() } }
        identityStreams = [:]
    }

    /// Declares a generation of the task `name` of `key` that fails with `error` instead of
    /// running: the previous run is cancelled, at once, whatever the task's debounce, throttle,
    /// policy, limit or time limit. Its identity is new, so it is never an unchanged
    /// declaration. Loop thread only.
    func declareFailure(
        _ key: Key, name: TaskName, values declared: TaskOptions.Values, error: any Error, observed: Bool,
        identity: (any Hashable & Sendable)? = nil
    ) {
        var values = declared
        values.debounce = .zero
        values.throttle = .zero
        values.policy = .cancelPrevious
        values.progressDelay = nil
        values.timeout = nil
        values.rareNumber = 0
        values.limitBits = 0
        values.synchronousDelay = .zero
        apply(
            key, name: name, identity: ErasedIdentity(identity ?? FailedIdentity()), values: values,
            body: .synchronous({ _ in throw error }), observed: observed)
    }
}

/// The identity of a generation declared to fail (`declareFailure`): equal to no other.
struct FailedIdentity: Hashable, Sendable, CustomStringConvertible {
    private let marker = FailedIdentityMarker()

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.marker === rhs.marker }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(marker)) }
    var description: String { "failed" }
}

private final class FailedIdentityMarker: Sendable {}

/// One consumption of a sequence of identities (`task(_:identities:…)`): the task it declares,
/// with what, and the Swift task that consumes it.
final class IdentityStreamConsumer<Key: Hashable & Sendable>: @unchecked Sendable {
    // @unchecked Sendable: made on any thread and handed to the loop once; `task` is set and
    // read on the loop thread only (IdentityStreamTests checks removal from another thread).
    let key: TaskRegistry<Key>.ObserverKey
    let whenFinished: IdentitiesEnd
    let values: TaskOptions.Values
    let body: RunBody
    var task: Task<Void, Never>?

    init(key: TaskRegistry<Key>.ObserverKey, whenFinished: IdentitiesEnd, values: TaskOptions.Values, body: RunBody) {
        self.key = key
        self.whenFinished = whenFinished
        self.values = values
        self.body = body
    }
}
