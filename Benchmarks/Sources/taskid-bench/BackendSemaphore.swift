import Synchronization

/// The async semaphore a user writes by hand to protect a backend (W9's baselines): `permits`
/// places, and a FIFO of the tasks waiting for one. `wait()` is the common form, deaf to
/// cancellation; `waitUnlessCancelled()` is the best a user writes: a cancelled waiter leaves
/// the queue at once and throws.
///
/// May be used from any thread (its state is under a mutex); W9 uses it on one loop.
final class BackendSemaphore: Sendable {
    private struct State {
        var permits: Int
        /// Waiters by number, and their numbers in arrival order (a number whose waiter left
        /// is skipped when reached).
        var waiters: [Int: Waiter] = [:]
        var order: [Int] = []
        var head = 0
        var nextNumber = 0
    }

    private enum Waiter {
        /// Registered, not yet parked (its continuation is being made).
        case arriving
        case parked(CheckedContinuation<Void, any Error>)
        /// Cancelled before it parked.
        case cancelled
        /// Given a permit before it parked.
        case granted
    }

    private let state: Mutex<State>

    init(permits: Int) {
        state = Mutex(State(permits: permits))
    }

    /// Tasks waiting now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Takes a permit, waiting for one as long as it takes, even when the task is cancelled.
    func wait() async {
        let ready = state.withLock { state -> Bool in
            guard state.permits == 0 else {
                state.permits -= 1
                return true
            }
            return false
        }
        if ready { return }
        // Never throws: a deaf waiter is resumed only with a permit.
        try? await withCheckedThrowingContinuation { continuation in
            state.withLock { state in
                let number = state.nextNumber
                state.nextNumber += 1
                state.waiters[number] = .parked(continuation)
                state.order.append(number)
            }
        }
    }

    /// Takes a permit, or throws `CancellationError` as soon as the task is cancelled while it
    /// waits (leaving the queue).
    func waitUnlessCancelled() async throws {
        let number: Int? = try state.withLock { state -> Int? in
            if Task.isCancelled { throw CancellationError() }
            guard state.permits == 0 else {
                state.permits -= 1
                return nil
            }
            let number = state.nextNumber
            state.nextNumber += 1
            state.waiters[number] = .arriving
            state.order.append(number)
            return number
        }
        guard let number else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let meanwhile = state.withLock { state -> Waiter? in
                    switch state.waiters[number] {
                    case .cancelled?, .granted?:
                        return state.waiters.removeValue(forKey: number)
                    default:
                        state.waiters[number] = .parked(continuation)
                        return nil
                    }
                }
                switch meanwhile {
                case .cancelled?: continuation.resume(throwing: CancellationError())
                case .granted?: continuation.resume()
                default: break
                }
            }
        } onCancel: {
            let parked = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                switch state.waiters[number] {
                case .parked(let continuation)?:
                    state.waiters[number] = nil
                    return continuation
                case .arriving?:
                    state.waiters[number] = .cancelled
                    return nil
                case .cancelled?, .granted?, nil:
                    return nil  // already cancelled, or holding a permit
                }
            }
            parked?.resume(throwing: CancellationError())
        }
    }

    /// Gives a permit back: to the first waiter still waiting, or to the pool.
    func signal() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            while state.head < state.order.count {
                let number = state.order[state.head]
                state.head += 1
                if state.head > 4_096 && state.head * 2 > state.order.count {
                    state.order.removeFirst(state.head)
                    state.head = 0
                }
                switch state.waiters.removeValue(forKey: number) {
                case .parked(let continuation)?:
                    return continuation
                case .arriving?:
                    state.waiters[number] = .granted  // it finds the permit when it parks
                    return nil
                case .cancelled?:
                    state.waiters[number] = .cancelled  // left for it to find when it parks
                    continue
                case .granted?, nil:
                    continue
                }
            }
            state.permits += 1
            return nil
        }
        next?.resume()
    }
}
