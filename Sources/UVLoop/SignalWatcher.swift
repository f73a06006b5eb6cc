import CLibUV

/// Calls a closure on the loop thread when the process receives a signal (`uv_signal_t`), for
/// graceful shutdown on SIGINT/SIGTERM. Create it with `UVLoop.watchSignal(_:_:)`.
///
/// Loop thread only (checked per call). The loop's shutdown closes it.
///
/// Unchecked `Sendable`: loop-thread-only state; Sendable so tasks on the loop can hold it across awaits.
public final class SignalWatcher: @unchecked Sendable {
    private let loop: UVLoop
    // libuv needs the handle at a stable address until its close callback frees it.
    private var handle: UnsafeMutablePointer<uv_signal_t>?
    private let onSignal: (Int32) -> Void

    /// - Throws: `LoopError` `.calledOffLoopThread`, `.shutDown` (naming `UVLoop.watchSignal`)
    ///   or libuv's error.
    init(loop: UVLoop, signal: Int32, onSignal: @escaping (Int32) -> Void) throws(LoopError) {
        self.loop = loop
        self.onSignal = onSignal
        let handle = try UVHandle.open(uv_signal_t.self, on: loop, operation: "UVLoop.watchSignal")
        self.handle = handle
        UVHandle.attach(self, to: handle)
        let started = uv_signal_start(
            handle,
            { handle, signal in
                UVHandle.owner(SignalWatcher.self, of: handle!.pointee.data)?.onSignal(signal)
            }, signal)
        if started < 0 {
            close()
            throw LoopError(.libuv(started), operation: "uv_signal_start(\(signal))")
        }
    }

    deinit { close() }

    /// Stops watching and closes the handle. Idempotent.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the watcher is open; once closed
    ///   it does nothing, on any thread).
    public func close() {
        guard let handle else { return }
        loop.preconditionInLoop()
        self.handle = nil
        UVHandle.close(handle)
    }
}

extension UVLoop {
    /// Calls `onSignal` on the loop thread each time the process receives `signal` (e.g.
    /// `SIGINT`), instead of the default action.
    ///
    /// - Throws: `LoopError` (`.calledOffLoopThread`, `.shutDown`, or a libuv error).
    /// - Note: Loop thread only; keep the returned watcher, dropping it stops the watching.
    public func watchSignal(_ signal: Int32, _ onSignal: @escaping (Int32) -> Void) throws(LoopError) -> SignalWatcher {
        try SignalWatcher(loop: self, signal: signal, onSignal: onSignal)
    }
}
