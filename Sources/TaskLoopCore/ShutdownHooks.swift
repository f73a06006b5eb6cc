/// The `onShutdown` hooks of a loop: added from any thread, run once, on the loop thread, when
/// shutdown begins; a hook added after that runs at once, on the thread adding it. Shared by
/// `UVLoop`, `TestLoop` and, in its own module, `NIOTaskLoop` (package access).
package final class ShutdownHooks: Sendable {
    /// nil once the hooks have run.
    private let hooks = Locked<[@Sendable () -> Void]?>([])

    /// No hooks yet. May be called from any thread.
    package init() {}

    /// Keeps `body` for `runOnce()`, or runs it now, on the calling thread, if that has run.
    /// May be called from any thread.
    package func add(_ body: @escaping @Sendable () -> Void) {
        let kept = hooks.withLock { hooks -> Bool in
            guard hooks != nil else { return false }
            hooks!.append(body)
            return true
        }
        // Outside the lock: the hook may register another hook.
        if !kept { body() }
    }

    /// Runs the hooks added so far, once; later calls do nothing. On the loop thread, as the
    /// loop's shutdown begins (or on the thread finishing a loop that never ran).
    package func runOnce() {
        let toRun = hooks.withLock { hooks in
            defer { hooks = nil }
            return hooks ?? []
        }
        for hook in toRun { hook() }
    }
}
