#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The queue of calls made on a registry from threads other than its loop's.
///
/// Its own small pthread-mutex type rather than the loop module's: the posting path is
/// `@inlinable` (specialized for the caller's key type, on the producers' threads and on the
/// loop), and inlinable code may only use public declarations. A pthread mutex rather than
/// `Synchronization.Mutex`, which ThreadSanitizer misreports on this toolchain.
///
/// Bounded: a caller that finds `capacity` calls already waiting blocks until the loop has
/// taken them, so a producer faster than the loop cannot grow memory without limit.
@usableFromInline
final class PostedCalls<Operation>: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline let drained: UnsafeMutablePointer<pthread_cond_t>
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
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        drained = .allocate(capacity: 1)
        drained.initialize(to: pthread_cond_t())
        pthread_cond_init(drained, nil)
    }

    deinit {
        pthread_cond_destroy(drained)
        drained.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Appends `operation`; returns whether the caller must schedule a drain.
    /// - Throws: `RegistryError.shutDown` once closed.
    @inlinable
    func append(_ operation: Operation) throws(RegistryError) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while operations.count >= capacity && !closed && drainScheduled {
            pthread_cond_wait(drained, mutex)
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
        pthread_mutex_lock(mutex)
        let wasFull = operations.count >= capacity
        swap(&operations, &buffer)
        drainScheduled = false
        pthread_mutex_unlock(mutex)
        if wasFull { pthread_cond_broadcast(drained) }
    }

    /// Refuses further calls; with `dropping`, also takes the queued ones out and returns them,
    /// so that the caller can answer the ones that someone waits for.
    @usableFromInline
    func close(dropping: Bool) -> [Operation] {
        pthread_mutex_lock(mutex)
        closed = true
        var dropped: [Operation] = []
        if dropping {
            dropped = operations.compactMap { $0 }
            operations = []
        }
        pthread_mutex_unlock(mutex)
        pthread_cond_broadcast(drained)
        return dropped
    }
}
