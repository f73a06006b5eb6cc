/// A value guarded by a `PThreadMutex`. Shared with the registry module (package access).
///
/// `Sendable` whatever `Value` is: `withLock` is the only way to the value.
package final class Locked<Value>: @unchecked Sendable {  // unchecked: `value` is only reached under `mutex`
    private let mutex = PThreadMutex()
    private var value: Value

    /// Creates the guarded value. May be called from any thread.
    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, holding the lock. May be called from any thread not already
    /// inside this value's `withLock`.
    @inline(__always)
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return try body(&value)
    }
}
