import UVLoop

/// What a running action knows about itself: its id and generation, whether it is still the
/// current run, a `commit` that lets its results land only while it is, and the loop's clock.
///
/// Passed by value and `Sendable`, but `isCurrent` and `commit` read the registry's state and
/// must be called on the registry's loop thread — which is where actions run, unless they hop
/// to another executor themselves.
public struct TaskContext: Sendable {
    let run: any RunOwner

    /// The generation of this run: how many identities its task has had in this slot's
    /// lifetime when it was declared, counting from 1.
    public let generation: UInt64

    /// The identity this run was declared with: the value itself for `id: value`, a
    /// `CompoundIdentity` for `id: a, b`, `nil` for a task declared without an id.
    public let id: (any Hashable & Sendable)?

    /// The registry loop's clock, for sleeps and deadlines that tests can drive in virtual time.
    public let clock: LoopClock

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
    public func commit(_ body: () throws -> Void) rethrows -> Bool {
        run.preconditionInLoop()
        guard run.isCurrentRun(generation) else {
            run.noteStaleCommit()
            return false
        }
        try body()
        return true
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
        guard run.isCurrentRun(generation) else {
            run.noteStaleCommit()
            return false
        }
        run.storeResult(result)
        return true
    }
}

/// The registry side of a context. Loop thread only, except `preconditionInLoop`.
protocol RunOwner: AnyObject, Sendable {
    func preconditionInLoop()
    func isCurrentRun(_ generation: UInt64) -> Bool
    func noteStaleCommit()
    func storeResult(_ result: any Sendable)
}
