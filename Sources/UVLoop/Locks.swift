#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A pthread mutex at a stable address. `Synchronization.Mutex` would do, but ThreadSanitizer
/// reports false races inside it on this toolchain, and the cross-thread tests run under TSan.
final class PThreadMutex: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(mutex, nil)
        precondition(result == 0, "BUG DETECTED: pthread_mutex_init failed with \(result)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    func lock() { pthread_mutex_lock(mutex) }

    @inline(__always)
    func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always)
    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A value guarded by a `PThreadMutex`. Shared with the registry module (package access).
package final class Locked<Value>: @unchecked Sendable {
    private let mutex = PThreadMutex()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    @inline(__always)
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&value)
    }
}

/// A one-shot signal one thread waits for and another raises (start-up handshakes).
final class OneShotSignal: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var raised = false

    init() {
        mutex.initialize(to: pthread_mutex_t())
        condition.initialize(to: pthread_cond_t())
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func raise() {
        pthread_mutex_lock(mutex)
        raised = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    func wait() {
        pthread_mutex_lock(mutex)
        while !raised { pthread_cond_wait(condition, mutex) }
        pthread_mutex_unlock(mutex)
    }
}

/// The `onShutdown` hooks of a loop: added from any thread, run once, on the loop thread, when
/// shutdown begins; a hook added after that never runs.
final class ShutdownHooks: @unchecked Sendable {
    private let hooks = Locked<[@Sendable () -> Void]?>([])

    func add(_ body: @escaping @Sendable () -> Void) {
        hooks.withLock { $0?.append(body) }
    }

    /// Runs the hooks added so far, once; later calls do nothing.
    func runOnce() {
        let toRun = hooks.withLock { hooks in
            defer { hooks = nil }
            return hooks ?? []
        }
        for hook in toRun { hook() }
    }
}
