/// A registry's shutdown: whether it has begun, the callers waiting for every action to end,
/// and the runs that themselves await `shutdown()` (not waited for).
///
/// Loop thread only, inside its core; `isShutDown` is read by declarations on the loop thread.
@usableFromInline
final class ShutdownState {
    /// Shutdown has begun: declarations are refused. Unchecked exclusivity: loop thread only,
    /// read on every declaration and every run's end, never across a call.
    @exclusivity(unchecked) @usableFromInline private(set) var isShutDown = false
    /// Every task has been cancelled and removed, and the timers closed: what `shutdown()`
    /// does last (a graceful shutdown first lets its runs finish with `isShutDown` set).
    private(set) var isFinal = false
    private var waiters: [() -> Void] = []
    /// Runs of this registry that await `shutdown()` (in their action or a child task of it):
    /// shutdown returns once every other action has ended. A run awaiting it from several
    /// child tasks counts once. A list, not a table: it holds the few runs that call
    /// `shutdown()`, and only while it waits. Unchecked exclusivity: as `isShutDown`.
    @exclusivity(unchecked) private var runsAwaiting: [RunKey] = []

    init() {}

    /// Shutdown begins.
    func begin() { isShutDown = true }

    /// The tasks are removed and the timers closed.
    func finish() { isFinal = true }

    /// How many runs await shutdown themselves.
    var runsAwaitingCount: Int { runsAwaiting.count }

    /// `body` waits for quiescence; `awaitingRun`, if any, is the caller's own run, not waited for.
    func wait(awaitingRun: RunKey?, _ body: @escaping () -> Void) {
        if let awaitingRun, !runsAwaiting.contains(awaitingRun) { runsAwaiting.append(awaitingRun) }
        waiters.append(body)
    }

    /// The run `run` ended: it no longer awaits shutdown, if it did.
    func runEnded(_ run: RunKey) {
        guard !runsAwaiting.isEmpty else { return }
        runsAwaiting.removeAll { $0 == run }
    }

    /// The waiters, taken: quiescence came. The runs that awaited shutdown now return from it
    /// and end on their own.
    func takeWaiters() -> [() -> Void] {
        runsAwaiting = []
        let taken = waiters
        waiters = []
        return taken
    }
}
