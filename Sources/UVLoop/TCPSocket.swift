import CLibUV

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The engine behind `TCPListener` and `TCPConnection`: one `uv_tcp_t`, its pending accept,
/// connect and read, its state (`TCPSocketState`), and their cancellation; writing is in
/// TCPWrite.swift, libuv's callbacks in TCPCallbacks.swift. The handle's `data` points here
/// (`UVHandle`). Loop thread only.
///
/// Unchecked `Sendable`: loop-thread only; off-loop cancellation hops to the loop before touching it.
final class TCPSocket: @unchecked Sendable {
    /// The socket's state, whose waiting read is a continuation.
    typealias State = TCPSocketState<UnsafeContinuation<Int, any Error>>

    unowned let loop: UVLoop
    // libuv needs the handle at a stable address until its close callback frees it.
    let handle: UnsafeMutablePointer<uv_tcp_t>
    /// Open or closed, and what reading is doing. Changed only in this file, through its events.
    private(set) var state = State()

    private var acceptWaiter: UnsafeContinuation<TCPSocket, any Error>?
    private var pendingConnections = 0
    /// Waiting for `uv_shutdown`'s callback.
    var shutdownWaiter: UnsafeContinuation<Void, any Error>?
    // libuv owns the request until its callback; freed there.
    private var connectRequest: UnsafeMutablePointer<uv_connect_t>?
    private var connectWaiter: UnsafeContinuation<Void, any Error>?
    /// Writes in flight, alive until libuv's write callback (TCPWrite.swift).
    var writes: [ObjectIdentifier: TCPWrite] = [:]
    /// Waiting in `flush()` until `writes` is empty.
    var flushWaiters: [UnsafeContinuation<Void, any Error>] = []
    static let readBufferSize = 65_536
    private var readBuffer: UnsafeMutableRawPointer?

    /// - Throws: `LoopError` `.calledOffLoopThread` or `.shutDown` naming `operation`, or
    ///   `uv_tcp_init`'s error.
    init(loop: UVLoop, operation: String) throws(LoopError) {
        self.loop = loop
        handle = try UVHandle.open(uv_tcp_t.self, on: loop, operation: operation)
        UVHandle.attach(self, to: handle)
        let noDelay = uv_tcp_nodelay(handle, 1)
        if noDelay < 0 { loop.log.debug("\(loop): uv_tcp_nodelay failed: \(LoopError.name(ofLibuvCode: noDelay))") }
    }

    deinit {
        close(reason: nil)
        readBuffer?.deallocate()
    }

    // uv_tcp_t begins with uv_stream_t (libuv's layout); the C shim does the cast.
    var stream: UnsafeMutablePointer<uv_stream_t> { clibuv_tcp_as_stream(handle) }

    /// Whether `close(reason:)` has not run. Loop thread only (checked while open).
    var isOpen: Bool {
        guard state.isOpen else { return false }
        loop.preconditionInLoop()
        return true
    }

    /// The bound port; 0 once closed (the handle may be freed) or when the kernel cannot tell.
    /// Loop thread only (checked while open).
    var localPort: Int {
        guard isOpen else { return 0 }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        // sockaddr_storage viewed as the sockaddr the C API takes; scoped to the call.
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) }
        }
        guard result == 0 else { return 0 }
        return port(of: storage)
    }

    func closedError(_ operation: String) -> any Error {
        state.closeReason ?? LoopError(.handleClosed, operation: operation)
    }

    // MARK: Listening

    func startListening(backlog: Int32) throws(LoopError) {
        try LoopError.check(uv_listen(stream, backlog, tcpConnectionCallback), "uv_listen")
    }

    /// libuv's connection callback: a connection waits to be accepted, or accepting failed.
    func connectionArrived(status: Int32) {
        if status < 0 {
            if let waiter = acceptWaiter.take() {
                waiter.resume(throwing: LoopError(.libuv(status), operation: "accept"))
            } else {
                loop.log.debug(
                    "\(loop): a connection failed with nobody accepting: \(LoopError.name(ofLibuvCode: status))")
            }
            return
        }
        pendingConnections += 1
        if let waiter = acceptWaiter.take() { completeAccept(waiter) }
    }

    private func completeAccept(_ waiter: UnsafeContinuation<TCPSocket, any Error>) {
        pendingConnections -= 1
        do {
            let client = try TCPSocket(loop: loop, operation: "accept")
            let result = uv_accept(stream, client.stream)
            if result < 0 {
                client.close(reason: nil)
                waiter.resume(throwing: LoopError(.libuv(result), operation: "uv_accept"))
            } else {
                waiter.resume(returning: client)
            }
        } catch {
            waiter.resume(throwing: error)
        }
    }

    func accept() async throws -> TCPSocket {
        try await withCancellation { continuation in
            guard self.state.isOpen else { return continuation.resume(throwing: self.closedError("accept")) }
            if self.pendingConnections > 0 {
                self.completeAccept(continuation)
            } else {
                self.acceptWaiter = continuation
            }
        }
    }

    // MARK: Connecting

    func connect(to address: inout sockaddr_storage, description: String) async throws {
        var storage = address
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            // Allocated here, where it is certain to be handed to libuv (or freed at once).
            // Freed in the connect callback, or below if libuv refuses it.
            let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
            // Unretained: the pending connect is answered (ECANCELED at worst) before the socket goes.
            request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            // sockaddr_storage viewed as the sockaddr the C API takes; scoped to the call.
            let result = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    uv_tcp_connect(request, self.handle, $0, tcpConnectCallback)
                }
            }
            if result < 0 {
                request.deallocate()
                continuation.resume(throwing: LoopError(.libuv(result), operation: "uv_tcp_connect(\(description))"))
                return
            }
            // The request is freed in its callback, which libuv always calls (ECANCELED on close).
            self.connectRequest = request
            self.connectWaiter = continuation
        }
    }

    /// libuv's connect callback, with its request, which is freed here.
    func connected(status: Int32, request: UnsafeMutablePointer<uv_connect_t>) {
        request.deallocate()
        connectRequest = nil
        guard let waiter = connectWaiter.take() else { return }
        if status == 0 && state.isOpen {
            waiter.resume()
        } else if status == UV_ECANCELED.rawValue || !state.isOpen {
            waiter.resume(throwing: closedError("connect"))
        } else {
            waiter.resume(throwing: LoopError(.libuv(status), operation: "connect"))
        }
    }

    // MARK: Reading

    /// Waits for a chunk and hands it to `body`, or returns nil at the end of the stream.
    func read<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result? {
        let count = try await readCount()
        guard count > 0, let readBuffer else { return nil }
        // The chunk stays in `readBuffer` until `body` is done: while it is held, libuv gets no
        // buffer to read into. The buffer lives as long as this object (freed in deinit).
        defer { state.consumed() }
        return try body(UnsafeRawBufferPointer(start: readBuffer, count: count))
    }

    /// Waits for the next chunk; returns its size, or 0 at the end of the stream.
    ///
    /// Reading stays on between reads (stopping and restarting costs two `epoll_ctl` calls per
    /// chunk). Backpressure still holds: while a chunk waits to be consumed, libuv is given no
    /// buffer, the bytes stay in the kernel, and after one refusal (`UV_ENOBUFS`) reading stops
    /// until the next read.
    private func readCount() async throws -> Int {
        guard loop.inLoop else { throw LoopError(.calledOffLoopThread, operation: "TCP I/O") }
        if let ready = state.readWithoutWaiting() { return try readResult(ready) }
        return try await withCancellation { continuation in
            self.perform(self.state.readWaits(continuation))
        }
    }

    private func readResult(_ count: Int) throws -> Int {
        if count < 0 && count != Int(UV_EOF.rawValue) { throw LoopError(.libuv(Int32(count)), operation: "read") }
        return max(count, 0)
    }

    /// libuv's allocation callback: the read buffer, or nil while it holds a chunk (libuv then
    /// answers `UV_ENOBUFS`; see `TCPSocketState.received`).
    func allocate() -> UnsafeMutableRawPointer? {
        guard state.readBufferIsFree else { return nil }
        if let readBuffer { return readBuffer }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.readBufferSize, alignment: 16)
        readBuffer = buffer
        return buffer
    }

    /// libuv's read callback.
    func received(count: Int) {
        perform(state.received(count))
    }

    /// Carries out what the state asks for after an event.
    private func perform(_ action: State.ReadAction) {
        switch action {
        case .none:
            break
        case .startLibuvReading:
            let result = uv_read_start(stream, tcpAllocCallback, tcpReadCallback)
            if result < 0, let waiter = state.libuvReadingFailedToStart() {
                waiter.resume(throwing: LoopError(.libuv(result), operation: "uv_read_start"))
            }
        case .stopLibuvReading:
            uv_read_stop(stream)
        case .resume(let waiter, let count):
            waiter.resume(returning: count)
        case .fail(let waiter, let error):
            waiter.resume(throwing: error)
        case .stopLibuvReadingAndResume(let waiter, let count):
            uv_read_stop(stream)
            waiter.resume(returning: count)
        case .stopLibuvReadingAndFail(let waiter, let error):
            uv_read_stop(stream)
            waiter.resume(throwing: error)
        }
    }

    /// Reads and throws away what arrives until the peer ends the stream (after `stopReading`
    /// too), or until it has sent nothing for `quietPeriod`: an idle peer may not notice the
    /// FIN until it next sends, and with nothing unread, closing sends no reset.
    func discardUntilEnd(quietPeriod: Duration) async throws {
        guard loop.inLoop else { throw LoopError(.calledOffLoopThread, operation: "TCP I/O") }
        state.readAgainAfterStopReading()
        while true {
            if !state.hasUnreadChunk && unreadBytesInKernel() == 0 {
                perform(state.pauseIdleReading())  // let the kernel count what arrives while we wait
                try await loop.clock.sleep(for: quietPeriod)
                guard state.isOpen else { throw closedError("read") }
                if unreadBytesInKernel() == 0 { return }
            }
            guard try await readCount() > 0 else { return }
            state.consumed()  // discarded
        }
    }

    /// Bytes received by the kernel and not read yet (`FIONREAD`); 0 when it cannot tell.
    private func unreadBytesInKernel() -> Int {
        var descriptor = uv_os_fd_t()
        // uv_tcp_t is a uv_handle_t (libuv's layout); the C shim does the cast.
        guard uv_fileno(clibuv_tcp_as_handle(handle), &descriptor) == 0 else { return 0 }
        var count: Int32 = 0
        guard ioctl(descriptor, UInt(FIONREAD), &count) == 0 else { return 0 }
        return Int(count)
    }

    /// Ends reading for good without closing: the pending read, if any, sees the end of the
    /// stream. Loop thread only (checked while open).
    func stopReading() {
        guard isOpen else { return }
        perform(state.stopReading())
    }

    // MARK: Closing and cancellation

    /// Closes the handle; waiters end with `reason` (nil: reads see end of stream, the
    /// others a closed-handle error). Memory is freed in the close callback. Loop thread only
    /// (checked while open).
    func close(reason: (any Error)?) {
        guard isOpen, let readAction = state.close(reason: reason) else { return }
        perform(readAction)
        acceptWaiter.take()?.resume(throwing: closedError("accept"))
        // Pending connect and writes are answered by their callbacks, with ECANCELED.
        UVHandle.close(handle)
    }

    func closeForShutdown() { close(reason: CancellationError()) }

    /// Runs `start` on the loop with a continuation; cancelling the task closes the socket.
    func withCancellation<T>(
        _ start: @escaping (UnsafeContinuation<T, any Error>) -> Void
    ) async throws -> T {
        guard loop.inLoop else { throw LoopError(.calledOffLoopThread, operation: "TCP I/O") }
        let box = UncheckedBox(self)
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    box.value.close(reason: CancellationError())
                    return
                }
                start(continuation)
            }
        } onCancel: {
            let socket = box.value
            if socket.loop.inLoop {
                socket.close(reason: CancellationError())
            } else {
                try? socket.loop.execute { box.value.close(reason: CancellationError()) }
            }
        }
    }
}
