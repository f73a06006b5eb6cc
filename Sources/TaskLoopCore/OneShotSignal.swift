/// A one-shot signal one thread waits for and another raises (start-up and shutdown handshakes).
///
/// Any thread may call `raise()` and `wait()`.
package final class OneShotSignal: @unchecked Sendable {  // unchecked: `raised` is only reached under `mutex`
    private let mutex = PThreadMutex()
    private let condition = PThreadCondition()
    private var raised = false

    package init() {}

    /// Raises the signal; every waiter, now or later, returns.
    package func raise() {
        mutex.withLock {
            raised = true
            condition.broadcast()
        }
    }

    /// Blocks the calling thread until the signal is raised.
    package func wait() {
        mutex.lock()
        while !raised { condition.wait(on: mutex) }
        mutex.unlock()
    }
}
