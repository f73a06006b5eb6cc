import UVLoop

/// The queue of calls made on a registry from threads other than its loop's.
///
/// Guarded by the loop module's `PThreadMutex` (package access, `@usableFromInline`): the posting path is
/// `@inlinable` (specialized for the caller's key type, on the producers' threads and on the
/// loop), and inlinable code may only use public or `@usableFromInline` declarations.
///
/// Bounded: a caller that finds `capacity` calls already waiting blocks until the loop has
/// taken them, so a producer faster than the loop cannot grow memory without limit.
@usableFromInline
final class PostedCalls<Operation>: @unchecked Sendable {  // unchecked: its vars are only reached under `mutex`
    @usableFromInline let mutex = PThreadMutex()
    /// Broadcast when the loop takes the queue, for producers blocked on a full one.
    @usableFromInline let drained = PThreadCondition()
    @usableFromInline let capacity: Int
    /// Guarded by `mutex`. Optional so the loop can move each one out without copying.
    @usableFromInline var operations: [Operation?] = []
    /// Guarded by `mutex`: a drain of `operations` is queued on the loop.
    @usableFromInline var drainScheduled = false
    /// Guarded by `mutex`: the registry has shut down and takes no more calls.
    @usableFromInline var closed = false

    @usableFromInline
    init(capacity: Int = 65_536) {
        self.capacity = capacity
    }

    /// Appends `operation`; returns whether the caller must schedule a drain.
    /// - Throws: `RegistryError.shutDown` once closed.
    @inlinable
    func append(_ operation: Operation) throws(RegistryError) -> Bool {
        mutex.lock()
        defer { mutex.unlock() }
        while operations.count >= capacity && !closed && drainScheduled {
            drained.wait(on: mutex)
        }
        guard !closed else { throw RegistryError.shutDown }
        operations.append(operation)
        if drainScheduled { return false }
        drainScheduled = true
        return true
    }

    /// Moves every queued operation into `buffer` (which must be empty), keeping capacities.
    @inlinable
    func take(into buffer: inout [Operation?]) {
        mutex.lock()
        let wasFull = operations.count >= capacity
        swap(&operations, &buffer)
        drainScheduled = false
        mutex.unlock()
        if wasFull { drained.broadcast() }
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
        drained.broadcast()
        return dropped
    }
}
