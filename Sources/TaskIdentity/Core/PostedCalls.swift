import TaskLoopCore

/// The queue of calls made on a registry from threads other than its loop's.
///
/// Guarded by the loop module's `PThreadMutex` (package access, `@usableFromInline`): the posting path is
/// `@inlinable` (specialized for the caller's key type, on the producers' threads and on the
/// loop), and inlinable code may only use public or `@usableFromInline` declarations.
///
/// Bounded, and never blocking: a declaration that finds `capacity` calls already waiting is
/// refused with `RegistryError.overloaded`, so a producer faster than the loop cannot grow
/// memory without limit, and no thread (a cooperative-pool thread, a NIO event loop) is ever
/// parked on the loop. Calls that someone awaits (`flush`, phase streams) are never refused.
@usableFromInline
final class PostedCalls<Operation>: @unchecked Sendable {  // unchecked: its vars are only reached under `mutex`
    @usableFromInline let mutex = PThreadMutex()
    @usableFromInline let capacity: Int
    /// Guarded by `mutex`. Optional so the loop can move each one out without copying.
    @usableFromInline var operations: [Operation?] = []
    /// Guarded by `mutex`: a drain of `operations` is queued on the loop.
    @usableFromInline var drainScheduled = false
    /// Guarded by `mutex`: the registry has shut down and takes no more calls.
    @usableFromInline var closed = false

    @usableFromInline
    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Appends `operation`; returns whether the caller must schedule a drain.
    /// - Parameter limited: whether a full queue refuses it (declarations); calls that a
    ///   caller awaits pass the limit, so that `flush()` always makes progress.
    /// - Throws: `RegistryError.shutDown` once closed; `RegistryError.overloaded` when
    ///   `limited` and `capacity` calls are already queued.
    @inlinable
    func append(_ operation: Operation, limited: Bool) throws(RegistryError) -> Bool {
        mutex.lock()
        defer { mutex.unlock() }
        guard !closed else { throw RegistryError.shutDown }
        if limited && operations.count >= capacity { throw RegistryError.overloaded }
        operations.append(operation)
        if drainScheduled { return false }
        drainScheduled = true
        return true
    }

    /// Moves every queued operation into `buffer` (which must be empty), keeping capacities.
    @inlinable
    func take(into buffer: inout [Operation?]) {
        mutex.lock()
        swap(&operations, &buffer)
        drainScheduled = false
        mutex.unlock()
    }

    /// Whether the registry takes no more calls. Any thread.
    @usableFromInline
    var isClosed: Bool {
        mutex.lock()
        defer { mutex.unlock() }
        return closed
    }

    /// Refuses further calls; with `dropping`, also takes the queued ones out and returns them,
    /// so that the caller can answer the ones that someone waits for.
    @usableFromInline
    func close(dropping: Bool) -> [Operation] {
        mutex.lock()
        closed = true
        var dropped: [Operation] = []
        if dropping {
            dropped = operations.compactMap { $0 }
            operations = []
        }
        mutex.unlock()
        return dropped
    }
}
