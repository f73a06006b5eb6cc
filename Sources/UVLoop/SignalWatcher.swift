import CLibUV

/// Calls a closure on the loop thread when the process receives a signal (`uv_signal_t`), for
/// graceful shutdown on SIGINT/SIGTERM. Create it with `UVLoop.watchSignal(_:_:)`.
///
/// Loop thread only. The loop's shutdown closes it.
///
/// Unchecked `Sendable`: loop-thread-only state; Sendable so tasks on the loop can hold it across awaits.
public final class SignalWatcher: @unchecked Sendable {
    private let loop: UVLoop
    // libuv needs the handle at a stable address until its close callback frees it.
    private var handle: UnsafeMutablePointer<uv_signal_t>?
    private let onSignal: (Int32) -> Void

    init(loop: UVLoop, signal: Int32, onSignal: @escaping (Int32) -> Void) throws(LoopError) {
        self.loop = loop
        self.onSignal = onSignal
        // Freed in the close callback (or just below if init fails), never before libuv lets go.
        let handle = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
        let result = uv_signal_init(loop.uvLoop, handle)
        if result < 0 {
            handle.deallocate()
            throw LoopError(.libuv(result), operation: "uv_signal_init")
        }
        self.handle = handle
        // Unretained: close() (also run by deinit) clears `data` before the watcher goes away.
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        loop.handleOpened()
        let started = uv_signal_start(
            handle,
            { handle, signal in
                guard let data = handle?.pointee.data else { return }
                // `data` is set only while the watcher is alive (close() clears it).
                Unmanaged<SignalWatcher>.fromOpaque(data).takeUnretainedValue().onSignal(signal)
            }, signal)
        if started < 0 {
            close()
            throw LoopError(.libuv(started), operation: "uv_signal_start(\(signal))")
        }
    }

    deinit { close() }

    /// Stops watching and closes the handle. Idempotent. Loop thread only.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        handle.pointee.data = nil
        uv_close(
            OpaquePointer(handle).withMemoryReboundHandle(),
            { handle in
                // The uv_loop_t's data is its UVLoop, which outlives every handle on it.
                let loop = Unmanaged<UVLoop>.fromOpaque(handle!.pointee.loop.pointee.data).takeUnretainedValue()
                handle!.withMemoryRebound(to: uv_signal_t.self, capacity: 1) { $0.deallocate() }
                loop.handleFreed()
            })
    }
}

extension OpaquePointer {
    // uv_signal_t begins with uv_handle_t (libuv's handle layout), so the cast is what libuv expects.
    fileprivate func withMemoryReboundHandle() -> UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutablePointer<uv_handle_t>(self)
    }
}

extension UVLoop {
    /// Calls `onSignal` on the loop thread each time the process receives `signal` (e.g.
    /// `SIGINT`), instead of the default action.
    ///
    /// - Throws: `LoopError` (`.calledOffLoopThread`, `.shutDown`, or a libuv error).
    /// - Note: Loop thread only; keep the returned watcher, dropping it stops the watching.
    public func watchSignal(_ signal: Int32, _ onSignal: @escaping (Int32) -> Void) throws(LoopError) -> SignalWatcher {
        guard inLoop else { throw LoopError(.calledOffLoopThread, operation: "UVLoop.watchSignal") }
        guard acceptsNewHandles else { throw LoopError(.shutDown, operation: "UVLoop.watchSignal") }
        return try SignalWatcher(loop: self, signal: signal, onSignal: onSignal)
    }
}
