#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A pthread mutex: the project's one lock type. `Locked`, `OneShotSignal` and the registry's
/// posted-call queue are built on it.
///
/// Not `Synchronization.Mutex`: ThreadSanitizer reports false races inside it on this toolchain,
/// and the cross-thread tests run under TSan. Non-copyable, so that the mutex it owns is
/// destroyed exactly once; keep it as a stored property of the object whose state it guards.
/// Package access, `@usableFromInline`, so that the registry's `@inlinable` posting path can use it.
///
/// Any thread may call every member; `unlock()` only on the thread that holds the lock.
@usableFromInline
package struct PThreadMutex: ~Copyable {
    // A pthread mutex must not move once initialised, so it lives at a heap address of its own.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates an unlocked mutex. May be called from any thread.
    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "BUG DETECTED: pthread_mutex_init failed with \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Blocks until the calling thread holds the lock. Not re-entrant. May be called from any thread.
    @inlinable @inline(__always)
    package func lock() { pthread_mutex_lock(mutex) }

    /// Releases the lock. Only the thread that holds it may call this.
    @inlinable @inline(__always)
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock. May be called from any thread not already holding it.
    @inlinable @inline(__always)
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
