#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A pthread condition variable, waited on with a `PThreadMutex` (the companion of the one lock
/// type, not a lock of its own). Its one user is `OneShotSignal`, the loop thread's start-up
/// and shutdown handshakes in `UVLoop`; the registry's posted-call queue no longer waits on it.
///
/// Any thread may call every member; `wait(on:)` only while holding the mutex it is given.
@usableFromInline
package struct PThreadCondition: ~Copyable {
    // Like the mutex, a condition variable must not move once initialised.
    @usableFromInline let condition: UnsafeMutablePointer<pthread_cond_t>

    /// Creates a condition variable. May be called from any thread.
    package init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        let result = pthread_cond_init(condition, nil)
        precondition(result == 0, "BUG DETECTED: pthread_cond_init failed with \(result)")
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Releases `mutex`, waits for a broadcast (or a spurious wake-up: callers re-check their
    /// condition in a loop) and takes `mutex` again. The caller must hold `mutex`.
    @inlinable @inline(__always)
    package func wait(on mutex: borrowing PThreadMutex) { pthread_cond_wait(condition, mutex.mutex) }

    /// Wakes every thread waiting. May be called from any thread, holding the mutex or not.
    @inlinable @inline(__always)
    package func broadcast() { pthread_cond_broadcast(condition) }
}
