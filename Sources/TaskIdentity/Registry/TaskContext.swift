import TaskLoopCore

/// What a running action knows about itself: its id and generation, whether it is still the
/// current run, a `commit` that lets its results land only while it is, and the loop's clock.
///
/// Passed by value and `Sendable`, but `isCurrent` and `commit` read the registry's state and
/// must be called on the registry's loop thread — which is where actions run by default. An
/// action off the loop (`executor: .global`, a hop of its own) uses `commitOnLoop` and
/// `isCurrentOnLoop()`, which may be called from anywhere.
public struct TaskContext: Sendable {
    /// The run's task record (a concrete class: calls on it are direct, and a context is one
    /// reference, a generation and an identity, small enough to travel in the run's closure).
    @usableFromInline let run: AnyTaskRecord

    /// The generation of this run: how many identities its task has had in this slot's
    /// lifetime when it was declared, counting from 1.
    public let generation: UInt64

    /// The identity this run was declared with, as the registry stores it (`NoIdentity` for
    /// none: see there why it is not optional).
    @usableFromInline let identity: any Hashable & Sendable

    /// The identity this run was declared with: the value itself for `id: value`, a
    /// `CompoundIdentity` for `id: a, b`, `nil` for a task declared without an id.
    public var id: (any Hashable & Sendable)? {
        type(of: identity) == NoIdentity.self ? nil : identity
    }

    /// Which attempt this run is: 1 for the first, 2 for the first retry, and so on (more than
    /// 1 only under a `RetryPolicy`).
    ///
    /// - Note: Loop thread only (the action's own thread while it runs on the loop).
    public var attempt: Int {
        run.preconditionInLoop()
        return run.core.attempt(of: run, generation: generation)
    }

    /// The keys of the slots this run serves now, as `type`: its own slot's while the run is
    /// current, or, for a run of a template that shares runs, every slot still in it (the
    /// action receives the key of the slot that started it). Empty once no slot is served.
    ///
    /// - Note: Loop thread only (the action's own thread while it runs on the loop).
    public func keys<Key: Hashable & Sendable>(as type: Key.Type) -> [Key] {
        run.preconditionInLoop()
        return run.core.servedRecords(run, generation: generation).compactMap { ($0 as? TaskRecord<Key>)?.key }
    }

    /// The registry loop's clock, for sleeps and deadlines that tests can drive in virtual time.
    ///
    /// May be read from any thread.
    public var clock: LoopClock { run.core.loop.clock }

    @usableFromInline
    init(run: AnyTaskRecord, generation: UInt64, identity: any Hashable & Sendable) {
        self.run = run
        self.generation = generation
        self.identity = identity
    }

    /// Why this run was cancelled, or `nil` while it is not: `identityChanged` when a new
    /// identity replaced it, `removed`, `timedOut` (its `timeout:` passed), `cancelledByCaller`
    /// (`TaskRegistry.cancel`), `registryShutDown` (at once, or once a graceful shutdown's grace
    /// period ran out). A shared run (`sharesRuns: true`) is cancelled only when its last slot
    /// leaves, for that slot's reason. Set before the run's Swift task is cancelled, so an
    /// action that sees `Task.isCancelled`, or a `withTaskCancellationHandler` handler, reads
    /// the reason; an action that throws `CancellationError` on its own is not cancelled by the
    /// registry, and reads `nil`. Meaningful while the run executes (its note goes with it).
    ///
    /// May be read from any thread, on any executor.
    public var cancellationReason: CancellationReason? { run.cancellationReason(of: generation) }

    /// The instant at which the registry cancels this run for its time limit (`timeout:`,
    /// reason `timedOut`): the run's start plus the limit, on the loop's clock (`clock`). `nil`
    /// for a run without a time limit, and for a synchronous action called at once (it ends
    /// before any limit could pass). Each attempt of a retried run has its own; a shared run's is
    /// its first slot's (the run goes on past it while other slots stay).
    ///
    /// May be read from any thread, on any executor.
    public var deadline: LoopInstant? {
        let nanoseconds = run.deadline(of: generation)
        return nanoseconds == 0 ? nil : LoopInstant(nanoseconds: nanoseconds)
    }

    /// The identity as a concrete type, e.g. `context.id(as: URL.self)`.
    ///
    /// May be called from any thread.
    public func id<Value>(as type: Value.Type) -> Value? { id as? Value }

    /// Whether this run is still the current one: not cancelled, not replaced by a newer run,
    /// its slot not removed.
    ///
    /// - Note: Loop thread only (the action's own thread while it runs on the loop).
    public var isCurrent: Bool {
        run.preconditionInLoop()
        return run.isCurrentRun(generation)
    }

    /// Runs `body` now if this run is still current, and drops it otherwise (counted as a
    /// stale commit), so that a stale result can never land.
    ///
    /// - Returns: whether `body` ran.
    /// - Note: Loop thread only (the action's own thread while it runs on the loop).
    @discardableResult
    @inlinable  // inlined into the action: the check and `body` need no call across modules
    public func commit(_ body: () throws -> Void) rethrows -> Bool {
        run.preconditionInLoop()
        return try landIfCurrent(body)
    }

    /// Stores `result` as the task's result if this run is still current, and drops it
    /// otherwise (counted as a stale commit). The registry keeps the latest stored result
    /// through later generations, until a newer run stores another or the slot is removed;
    /// read it with `TaskRegistry.result(of:name:as:)`. No lookup by key, and no allocation
    /// after the task's first result for a value of up to three words.
    ///
    /// - Returns: whether `result` was stored.
    /// - Note: Loop thread only (the action's own thread while it runs on the loop).
    @discardableResult
    public func commit(result: some Sendable) -> Bool {
        run.preconditionInLoop()
        return landIfCurrent { run.storeResult(result, generation: generation) }
    }
}

// MARK: - From any thread

extension TaskContext {
    /// `commit(_:)` from any thread or executor: hops to the registry's loop, runs `body` there
    /// if this run is still current (dropping it otherwise, counted as a stale commit), and
    /// returns to the caller's executor. This is how an action that runs off the loop
    /// (`executor: .global`, or an actor of its own) lands its result stale-proof: the check and
    /// `body` happen on the loop thread in one step, so no newer run can slip in between.
    ///
    /// `body` runs on the loop thread: it must not block. Its captures must be `Sendable`:
    /// loop-confined state is reached through a class confined to the loop (as `SearchSession`
    /// in docs/REGISTRY.md). On the loop thread this is `commit(_:)`, with no hop. After the loop has
    /// shut down, the run is over: `body` is dropped and this returns false.
    ///
    /// - Returns: whether `body` ran.
    /// - Note: May be called from any task.
    @discardableResult
    public func commitOnLoop(_ body: @Sendable () throws -> Void) async rethrows -> Bool {
        if run.loop.inLoop { return try commit(body) }
        return try await run.door.run { try landIfCurrent(body) }
    }

    /// `commit(result:)` from any thread or executor: hops to the registry's loop and stores
    /// `result` there if this run is still current (see `commitOnLoop(_:)`).
    ///
    /// - Returns: whether `result` was stored.
    /// - Note: May be called from any task.
    @discardableResult
    public func commitOnLoop(result: some Sendable) async -> Bool {
        if run.loop.inLoop { return commit(result: result) }
        return await run.door.run { landIfCurrent { run.storeResult(result, generation: generation) } }
    }

    /// `isCurrent` from any thread or executor, read on the registry's loop. The answer can be
    /// out of date as soon as it returns: to land a result, use `commitOnLoop`, which checks
    /// and lands in one step. (`Task.isCancelled` tells, from any thread, whether the run was
    /// cancelled.)
    ///
    /// - Note: May be called from any task.
    public func isCurrentOnLoop() async -> Bool {
        if run.loop.inLoop { return isCurrent }
        return await run.door.run { run.isCurrentRun(generation) }
    }

    /// Off the loop thread, posts `body` to the registry's loop and returns at once: there,
    /// after the work already queued, `body` runs if this run is still current, and is dropped
    /// otherwise (counted as a stale commit). The check happens on the loop, when `body`
    /// arrives, so it is as stale-proof as `commit`; nothing waits for it. On the loop thread
    /// it is `commit(_:)`: `body` runs now if the run is current.
    ///
    /// For actions run with `executor:` off the loop that land their result last: `commitOnLoop`
    /// costs a hop to the loop and one back, this one post, and a body posted before the action
    /// returns is handled before the run's end (both are posts, handled in order). An action
    /// isolated to an actor of its own, on a run of the loop, uses `commitOnLoop`: its run's end
    /// may overtake a post. After the loop has shut down, `body` is dropped.
    ///
    /// - Note: May be called from any thread.
    public func postCommit(_ body: @escaping @Sendable () -> Void) {
        if run.loop.inLoop {
            // A post would run after this turn's work, and so after the run's own end.
            commit(body)
            return
        }
        let context = self
        // The body runs outside this task: it carries the run's causal link (an observed
        // run's), so that what it writes is known to be this run's.
        let cause = ObservedRun.causeHere
        do {
            try run.loop.execute {
                if let cause {
                    ObservedRun.$current.withValue(cause) { _ = context.landIfCurrent(body) }
                } else {
                    _ = context.landIfCurrent(body)
                }
            }
        } catch {
            // The loop has shut down: the run is over (cancelled by the registry's shutdown).
        }
    }

    /// `commit`'s check and landing, without the thread check: `commit` checks the thread
    /// first; closures posted to the loop and the loop's `LoopDoor` call this as it is, since
    /// they run on the loop thread or, once the loop has shut down, one at a time on the
    /// enqueuing threads (where `inLoop` is false, and every run is over).
    @inlinable
    func landIfCurrent(_ body: () throws -> Void) rethrows -> Bool {
        guard run.isCurrentRun(generation) else {
            run.noteStaleCommit(generation)
            return false
        }
        // Recorded before the body: what the body does (declare, remove) follows it in a trace.
        run.noteCommitLanded(generation)
        try body()
        return true
    }
}
