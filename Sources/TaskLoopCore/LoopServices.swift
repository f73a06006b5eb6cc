/// What every loop kind of this package keeps the same way, written once: the hooks that run
/// when its shutdown begins (`TaskLoop.onShutdown(_:)`) and the scheduler of its sleeps
/// (`TaskLoop.sleep(until:)`: one loop timer for every sleeping task). Each loop holds one for
/// its whole life (`TaskLoop.services`) and runs its parts at shutdown. Nothing of it is public:
/// callers use the loop's own members.
///
/// `Sendable`: its parts lock what they share, or are touched on the loop thread only.
public final class LoopServices: Sendable {
    /// The `onShutdown` hooks, run once by the loop when its shutdown begins.
    package let shutdownHooks = ShutdownHooks()
    /// The sleeping tasks, woken by the loop's shutdown (`cancelAll`).
    package let sleepers = SleepScheduler()

    /// Parts with nothing registered yet. May be called from any thread.
    package init() {}
}
