/// The `onShutdown` hooks of a loop: added from any thread, run once, on the loop thread, when
/// shutdown begins; a hook added after that never runs.
final class ShutdownHooks: Sendable {
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
