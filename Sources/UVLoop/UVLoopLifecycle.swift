import Synchronization

extension UVLoop {
    /// Where a `UVLoop` is in its life. The one record of it: no flag beside it repeats a fact.
    ///
    /// ```
    /// notStarted ──start()──▶ starting ──thread runs──▶ running ──shutdown──▶ shutdownRequested
    ///     │                      │                                                 │
    ///     │ shutdown             │ shutdown                        loop thread acts│
    ///     ▼                      ▼                                                 ▼
    ///  shutDown      shutdownRequestedWhileStarting ──thread runs──▶ shutdownRequested
    ///     ▲                                                                        │
    ///     │              shuttingDown ◀────────────────────────────────────────────┘
    ///     └────drained────────┘
    /// ```
    ///
    /// - `notStarted → starting`: `start()`; a failed start goes on to `shutDown`.
    /// - `notStarted → shutDown`: shutdown of a loop that never started; no thread ever runs.
    /// - `starting → running`: the loop thread runs (`start()` returns after this).
    /// - `starting → shutdownRequestedWhileStarting → shutdownRequested`: shutdown asked for while
    ///   `start()` runs on another thread; the loop thread, once up, shuts down at once.
    /// - `running → shutdownRequested`: shutdown asked for from any thread; cross-thread
    ///   `execute` now throws `.shutDown`, and the loop thread is woken to act on it.
    /// - `shutdownRequested → shuttingDown`: the loop thread begins, once its `onShutdown` hooks
    ///   have run: sleepers are woken, every handle is closing; nothing new is taken, even on the
    ///   loop thread.
    /// - `shuttingDown → shutDown`: woken tasks and close callbacks have drained and
    ///   `uv_loop_close` has run; jobs still enqueued run on the enqueuing thread (trampoline).
    ///
    /// Every transition is made holding the cross-thread lock, so it is ordered with the
    /// cross-thread queue; the value is also atomic so that the loop thread's hot checks
    /// (`execute`, `makeTimer`) and `isShutDown` read it without the lock. Only the loop thread
    /// moves it to `shuttingDown` or `shutDown`, so the loop thread's own reads of those states
    /// are exact.
    enum Lifecycle: UInt8, AtomicRepresentable, CustomStringConvertible {
        case notStarted
        case starting
        case shutdownRequestedWhileStarting
        case running
        case shutdownRequested
        case shuttingDown
        case shutDown

        /// Whether the loop thread has begun (or finished) shutting down: no new work or
        /// handles are taken from then on.
        var hasBegunShutdown: Bool { self == .shuttingDown || self == .shutDown }

        /// Whether the loop thread exists and may be woken through its async handle.
        var loopThreadIsAwake: Bool { self == .running || self == .shutdownRequested || self == .shuttingDown }

        var description: String {
            switch self {
            case .notStarted: return "notStarted"
            case .starting: return "starting"
            case .shutdownRequestedWhileStarting: return "shutdownRequestedWhileStarting"
            case .running: return "running"
            case .shutdownRequested: return "shutdownRequested"
            case .shuttingDown: return "shuttingDown"
            case .shutDown: return "shutDown"
            }
        }
    }
}
