import CLibUV

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A listening TCP socket on a loop. Create it with `UVLoop.listen(host:port:backlog:)`.
///
/// Loop thread only: use it from a task that prefers the loop (or an actor pinned to it).
/// Cancelling a task waiting in `accept()` closes the listener.
///
/// Unchecked `Sendable`: loop-thread only (checked per call); Sendable so loop tasks can hold it across awaits.
public final class TCPListener: @unchecked Sendable {
    let socket: TCPSocket

    init(socket: TCPSocket) { self.socket = socket }

    /// The port the listener is bound to (useful after binding port 0).
    public var localPort: Int { socket.localPort }

    /// Waits for the next connection.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the listener is then closed) or
    ///   the loop shuts down; `LoopError` for a libuv error or a closed listener.
    /// - Note: Loop thread only; one `accept()` at a time.
    public func accept() async throws -> TCPConnection {
        TCPConnection(socket: try await socket.accept())
    }

    /// Stops listening and closes the socket. Idempotent. Loop thread only.
    public func close() { socket.close(reason: nil) }

    /// Whether the listener is still open. Loop thread only.
    public var isOpen: Bool { socket.isOpen }
}

/// A connected TCP stream on a loop: from `TCPListener.accept()` or `UVLoop.connect(host:port:)`.
///
/// Loop thread only. Cancelling a task waiting in `read()` or `write(_:)` closes the
/// connection: cancellation stops the I/O, it does not just ignore its result.
///
/// Unchecked `Sendable`: loop-thread only (checked per call); Sendable so loop tasks can hold it across awaits.
public final class TCPConnection: @unchecked Sendable {
    let socket: TCPSocket

    init(socket: TCPSocket) { self.socket = socket }

    /// Reads the next bytes that arrive (up to 64 KiB), or `nil` at the end of the stream.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed) or the
    ///   loop shuts down; `LoopError` for a libuv error (e.g. `ECONNRESET`) or a closed connection.
    /// - Note: Loop thread only; one `read()` at a time.
    public func read() async throws -> [UInt8]? {
        try await socket.read { Array($0) }
    }

    /// Reads the next bytes that arrive (up to 64 KiB) and hands them to `body` without copying
    /// them first; returns `body`'s result, or `nil` at the end of the stream. The bytes are
    /// valid only inside `body`.
    ///
    /// - Throws: as `read()`, or what `body` throws.
    /// - Note: Loop thread only; one read at a time.
    public func read<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result? {
        try await socket.read(body)
    }

    /// Writes `bytes` and returns once libuv has written them to the socket.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed);
    ///   `LoopError` for a libuv error or a closed connection.
    /// - Note: Loop thread only.
    public func write(_ bytes: [UInt8]) async throws {
        try await socket.write(bytes)
    }

    /// Writes `bytes` without waiting: what the socket takes now is written at once, the rest
    /// is queued and libuv keeps it until written. Watch `queuedWriteBytes` for a peer that
    /// does not read.
    ///
    /// - Throws: `LoopError`: the connection is closed, or the immediate write failed (e.g.
    ///   `EPIPE`, `ECONNRESET`); a queued write's failure closes nothing and is not reported.
    /// - Note: Loop thread only.
    public func send(_ bytes: [UInt8]) throws(LoopError) {
        try socket.send(bytes)
    }

    /// Bytes queued for writing that the socket has not taken yet. Loop thread only.
    public var queuedWriteBytes: Int { socket.queuedWriteBytes }

    /// Waits until no write is queued: every byte written or sent so far has been handed to the
    /// kernel (writes queued meanwhile are waited for too). Returns at once when nothing is
    /// queued. Handed to the kernel is not yet received: see `finishWriting()`.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed);
    ///   `LoopError` when the connection closes first or the last queued write fails.
    /// - Note: Loop thread only.
    public func flush() async throws {
        try await socket.flush()
    }

    /// Reads nothing more: a pending `read` returns `nil` as at the end of the stream, and so
    /// does every later one; bytes still arriving stay in the kernel. Writing goes on, so a
    /// server stopping gracefully can still deliver the replies it owes. Idempotent.
    /// Loop thread only.
    public func stopReading() { socket.stopReading() }

    /// Ends the stream gracefully, so that the peer receives every byte written: sends the end
    /// of the stream (FIN) after the queued writes, then reads and discards what the peer
    /// still sends until it closes its side, or sends nothing for `quietPeriod` (an idle peer
    /// may not look at the connection until it next uses it). Closing with unread bytes would
    /// make the kernel reset the connection, and the peer could lose replies in flight. Close
    /// the connection afterwards; bound the wait by cancelling the task.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed);
    ///   `LoopError` for a libuv error or a closed connection.
    /// - Note: Loop thread only; call it once, with no read pending.
    public func finishWriting(quietPeriod: Duration = .milliseconds(100)) async throws {
        try await socket.shutdownWriting()
        try await socket.discardUntilEnd(quietPeriod: quietPeriod)
    }

    /// Whether the connection is still open. Loop thread only.
    public var isOpen: Bool { socket.isOpen }

    /// Closes the connection (a pending read returns `nil`, pending writes fail). Idempotent.
    /// Loop thread only.
    public func close() { socket.close(reason: nil) }
}

extension UVLoop {
    /// Listens on `host:port` (an IPv4 or IPv6 literal, or `localhost`; port 0 picks a free port).
    ///
    /// - Throws: `LoopError` (e.g. `EADDRINUSE`, `EINVAL` for a bad address), `.calledOffLoopThread`,
    ///   `.shutDown`.
    /// - Note: Loop thread only.
    public func listen(host: String, port: Int, backlog: Int32 = 511) throws(LoopError) -> TCPListener {
        let socket = try TCPSocket(loop: self, operation: "UVLoop.listen")
        do {
            var address = try socketAddress(host: host, port: port)
            try withSockaddr(&address) { (pointer) throws(LoopError) in
                try LoopError.check(uv_tcp_bind(socket.handle, pointer, 0), "uv_tcp_bind(\(host):\(port))")
            }
            try socket.startListening(backlog: backlog)
        } catch {
            socket.close(reason: nil)
            throw error
        }
        return TCPListener(socket: socket)
    }

    /// Connects to `host:port` (an IPv4 or IPv6 literal, or `localhost`).
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the pending connect is closed);
    ///   `LoopError` (e.g. `ECONNREFUSED`).
    /// - Note: Loop thread only.
    public func connect(host: String, port: Int) async throws -> TCPConnection {
        let socket = try TCPSocket(loop: self, operation: "UVLoop.connect")
        var address: sockaddr_storage
        do { address = try socketAddress(host: host, port: port) } catch {
            socket.close(reason: nil)
            throw error
        }
        try await socket.connect(to: &address, description: "\(host):\(port)")
        return TCPConnection(socket: socket)
    }
}

/// Parses an IP literal (or `localhost`) into a socket address.
func socketAddress(host: String, port: Int) throws(LoopError) -> sockaddr_storage {
    guard (0...65_535).contains(port) else { throw LoopError(.libuv(-EINVAL), operation: "port \(port)") }
    var storage = sockaddr_storage()
    let literal = host == "localhost" ? "127.0.0.1" : host
    // sockaddr_storage is large and aligned enough for sockaddr_in/_in6, as the C API assumes.
    let result: Int32 = withUnsafeMutablePointer(to: &storage) { pointer in
        if literal.contains(":") {
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                uv_ip6_addr(literal, Int32(port), $0)
            }
        }
        return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
            uv_ip4_addr(literal, Int32(port), $0)
        }
    }
    try LoopError.check(result, "address \(host)")
    return storage
}

func withSockaddr<Result>(
    // `body` gets a pointer scoped to the call, never kept.
    _ storage: inout sockaddr_storage, _ body: (UnsafePointer<sockaddr>) throws(LoopError) -> Result
) throws(LoopError) -> Result {
    // sockaddr_storage viewed as the sockaddr the C API takes; scoped to the call.
    try withUnsafeMutablePointer(to: &storage) { (pointer) throws(LoopError) -> Result in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(LoopError) -> Result in
            try body(address)
        }
    }
}

/// The engine behind `TCPListener` and `TCPConnection`: one `uv_tcp_t`, its pending accept,
/// connect, read and writes, and their cancellation. `handle.data` points here (unretained);
/// the handle is freed in its close callback. Loop thread only.
///
/// Unchecked `Sendable`: loop-thread only; off-loop cancellation hops to the loop before touching it.
final class TCPSocket: @unchecked Sendable {
    unowned let loop: UVLoop
    // libuv needs the handle at a stable address until its close callback frees it.
    let handle: UnsafeMutablePointer<uv_tcp_t>
    private(set) var isOpen = true
    private var closeReason: (any Error)?

    private var acceptWaiter: UnsafeContinuation<TCPSocket, any Error>?
    private var pendingConnections = 0
    private var readWaiter: UnsafeContinuation<Int, any Error>?
    private var reading = false
    /// `readBuffer` holds a chunk its consumer has not finished with.
    private var bufferBusy = false
    /// A chunk that arrived while no read was waiting.
    private var pendingRead: Int?
    /// The end of the stream (`UV_EOF`) or a read error, once seen.
    private var endOfStream: Int?
    /// `stopReading()` set `endOfStream`, not the peer: `discardUntilEnd()` may read again.
    private var readingStoppedByCaller = false
    /// Waiting for `uv_shutdown`'s callback.
    private var shutdownWaiter: UnsafeContinuation<Void, any Error>?
    // libuv owns the request until its callback; freed there.
    private var connectRequest: UnsafeMutablePointer<uv_connect_t>?
    private var connectWaiter: UnsafeContinuation<Void, any Error>?
    private var writes: [ObjectIdentifier: TCPWrite] = [:]
    /// Waiting in `flush()` until `writes` is empty.
    private var flushWaiters: [UnsafeContinuation<Void, any Error>] = []
    static let readBufferSize = 65_536
    private var readBuffer: UnsafeMutableRawPointer?

    init(loop: UVLoop, operation: String) throws(LoopError) {
        guard loop.inLoop else { throw LoopError(.calledOffLoopThread, operation: operation) }
        guard loop.acceptsNewHandles else { throw LoopError(.shutDown, operation: operation) }
        self.loop = loop
        handle = .allocate(capacity: 1)
        let result = uv_tcp_init(loop.uvLoop, handle)
        if result < 0 {
            handle.deallocate()
            throw LoopError(.libuv(result), operation: "uv_tcp_init")
        }
        // Unretained: close() clears `data` before the socket can go away; callbacks check it.
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        loop.handleOpened()
        let noDelay = uv_tcp_nodelay(handle, 1)
        if noDelay < 0 { loop.log.debug("\(loop): uv_tcp_nodelay failed: \(LoopError.name(ofLibuvCode: noDelay))") }
    }

    deinit {
        close(reason: nil)
        readBuffer?.deallocate()
    }

    // uv_tcp_t begins with uv_stream_t (libuv's layout); the C shim does the cast.
    var stream: UnsafeMutablePointer<uv_stream_t> { clibuv_tcp_as_stream(handle) }

    var localPort: Int {
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        // sockaddr_storage viewed as the sockaddr the C API takes; scoped to the call.
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) }
        }
        guard result == 0 else { return 0 }
        let family = storage.ss_family
        // Read back as the family the kernel wrote (checked just above).
        return withUnsafePointer(to: &storage) { pointer in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    Int(UInt16(bigEndian: $0.pointee.sin6_port))
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                Int(UInt16(bigEndian: $0.pointee.sin_port))
            }
        }
    }

    private func closedError(_ operation: String) -> any Error {
        closeReason ?? LoopError(.handleClosed, operation: operation)
    }

    // MARK: Listening

    func startListening(backlog: Int32) throws(LoopError) {
        try LoopError.check(uv_listen(stream, backlog, tcpConnectionCallback), "uv_listen")
    }

    fileprivate func connectionArrived(status: Int32) {
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
            guard self.isOpen else { return continuation.resume(throwing: self.closedError("accept")) }
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

    // libuv's request, handed back in its callback and freed here.
    fileprivate func connected(status: Int32, request: UnsafeMutablePointer<uv_connect_t>) {
        request.deallocate()
        connectRequest = nil
        guard let waiter = connectWaiter.take() else { return }
        if status == 0 && isOpen {
            waiter.resume()
        } else if status == UV_ECANCELED.rawValue || !isOpen {
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
        // The chunk stays in `readBuffer` until `body` is done: while it is busy, libuv gets no
        // buffer to read into. The buffer lives as long as this object (freed in deinit).
        defer { bufferBusy = false }
        return try body(UnsafeRawBufferPointer(start: readBuffer, count: count))
    }

    /// Waits for the next chunk; returns its size, or 0 at the end of the stream.
    ///
    /// Reading stays on between reads (stopping and restarting costs two `epoll_ctl` calls per
    /// chunk). Backpressure still holds: while a chunk waits to be consumed, libuv is given no
    /// buffer, the bytes stay in the kernel, and after one refusal (`UV_ENOBUFS`) reading stops
    /// until the next read.
    private func readCount() async throws -> Int {
        if let result = pendingRead {
            pendingRead = nil
            return try readResult(result)
        }
        if let result = endOfStream { return try readResult(result) }
        return try await withCancellation { continuation in
            guard self.isOpen else {
                if self.closeReason == nil { return continuation.resume(returning: 0) }
                return continuation.resume(throwing: self.closedError("read"))
            }
            self.readWaiter = continuation
            if !self.reading {
                let result = uv_read_start(self.stream, tcpAllocCallback, tcpReadCallback)
                if result < 0 {
                    self.readWaiter = nil
                    continuation.resume(throwing: LoopError(.libuv(result), operation: "uv_read_start"))
                    return
                }
                self.reading = true
            }
        }
    }

    private func readResult(_ count: Int) throws -> Int {
        if count < 0 && count != Int(UV_EOF.rawValue) { throw LoopError(.libuv(Int32(count)), operation: "read") }
        return max(count, 0)
    }

    fileprivate func allocate() -> UnsafeMutableRawPointer? {
        if bufferBusy { return nil }  // libuv answers UV_ENOBUFS; see readCount
        if let readBuffer { return readBuffer }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.readBufferSize, alignment: 16)
        readBuffer = buffer
        return buffer
    }

    fileprivate func received(count: Int) {
        if count == 0 { return }  // EAGAIN: nothing this time
        if count == Int(UV_ENOBUFS.rawValue) {
            uv_read_stop(stream)  // the consumer is behind: let the kernel hold the bytes
            reading = false
            return
        }
        if count > 0 {
            bufferBusy = true
        } else {
            uv_read_stop(stream)  // end of stream or an error: nothing more will come
            reading = false
            endOfStream = count
        }
        if let waiter = readWaiter.take() {
            if count > 0 || count == Int(UV_EOF.rawValue) {
                waiter.resume(returning: max(count, 0))
            } else {
                waiter.resume(throwing: LoopError(.libuv(Int32(count)), operation: "read"))
            }
        } else if count > 0 {
            pendingRead = count  // arrived between reads; the next read takes it
        }
    }

    // MARK: Writing

    func write(_ bytes: [UInt8]) async throws {
        // Always through a request, even when the socket could take the bytes now: `write` is
        // a suspension point, so a task writing in a loop still lets the loop's other work run.
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            do { try self.queueWrite(bytes[...], waiter: continuation) } catch { continuation.resume(throwing: error) }
        }
    }

    func send(_ bytes: [UInt8]) throws(LoopError) {
        let written = try writeNow(bytes)
        if written == bytes.count { return }
        try queueWrite(bytes[written...], waiter: nil)
    }

    /// Writes what the socket takes now, when nothing is queued before it (`uv_try_write`);
    /// returns how many bytes that was. A write done here needs no request, no copy of the
    /// bytes and no change to the loop's poll registration (a completed `uv_write` costs an
    /// `epoll_ctl`), which was one syscall per reply batch of a busy server.
    private func writeNow(_ bytes: [UInt8]) throws(LoopError) -> Int {
        guard isOpen else { throw LoopError(.handleClosed, operation: "write") }
        if bytes.isEmpty { return 0 }
        let result = bytes.withUnsafeBytes { raw in
            var buffer = uv_buf_init(
                // uv_buf_t is not const, but uv_try_write only reads it; the bytes outlive the call.
                UnsafeMutablePointer(mutating: raw.baseAddress?.assumingMemoryBound(to: CChar.self)),
                UInt32(raw.count))
            return uv_try_write(stream, &buffer, 1)
        }
        if result >= 0 { return Int(result) }
        if result == UV_EAGAIN.rawValue { return 0 }  // queued writes first, or a full socket
        throw LoopError(.libuv(result), operation: "write")
    }

    /// Queues `bytes` behind the writes in flight; libuv writes them when the socket takes them.
    private func queueWrite(
        _ bytes: ArraySlice<UInt8>, waiter: UnsafeContinuation<Void, any Error>?
    ) throws(LoopError) {
        guard isOpen else { throw LoopError(.handleClosed, operation: "write") }
        let write = TCPWrite(socket: self, bytes: bytes, waiter: waiter)
        var buffer = uv_buf_init(
            write.bytes.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(write.bytes.count))
        let result = uv_write(write.request, stream, &buffer, 1, tcpWriteCallback)
        if result < 0 {
            write.release()
            throw LoopError(.libuv(result), operation: "uv_write")
        }
        writes[ObjectIdentifier(write)] = write  // alive until libuv calls back
    }

    fileprivate func written(_ write: TCPWrite, status: Int32) {
        writes[ObjectIdentifier(write)] = nil
        let waiter = write.waiter
        write.release()
        if writes.isEmpty && !flushWaiters.isEmpty {
            let waiters = flushWaiters
            flushWaiters.removeAll()
            for flushWaiter in waiters {
                if status == 0 { flushWaiter.resume() } else { flushWaiter.resume(throwing: closedError("flush")) }
            }
        }
        guard let waiter else { return }
        if status == 0 {
            waiter.resume()
        } else if status == UV_ECANCELED.rawValue {
            waiter.resume(throwing: closedError("write"))
        } else {
            waiter.resume(throwing: LoopError(.libuv(status), operation: "write"))
        }
    }

    var queuedWriteBytes: Int { isOpen ? uv_stream_get_write_queue_size(stream) : 0 }

    /// Waits until `writes` is empty (libuv completes writes in order, so that is when every
    /// byte queued before the call is written).
    func flush() async throws {
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            guard self.isOpen else { return continuation.resume(throwing: self.closedError("flush")) }
            if self.writes.isEmpty { return continuation.resume() }
            self.flushWaiters.append(continuation)
        }
    }

    /// Sends FIN once the queued writes are done (`uv_shutdown`) and waits for libuv's callback.
    func shutdownWriting() async throws {
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            guard self.isOpen else { return continuation.resume(throwing: self.closedError("shutdown")) }
            // libuv owns the request until its callback, which frees it (ECANCELED on close).
            let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
            // Unretained: the callback comes before the handle's close completes, and the
            // socket outlives its handle.
            request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
            let result = uv_shutdown(request, self.stream, tcpShutdownCallback)
            if result < 0 {
                request.deallocate()
                continuation.resume(throwing: LoopError(.libuv(result), operation: "uv_shutdown"))
                return
            }
            self.shutdownWaiter = continuation
        }
    }

    fileprivate func shutDown(status: Int32) {
        guard let waiter = shutdownWaiter.take() else { return }
        if status == 0 {
            waiter.resume()
        } else if status == UV_ECANCELED.rawValue || !isOpen {
            waiter.resume(throwing: closedError("shutdown"))
        } else {
            waiter.resume(throwing: LoopError(.libuv(status), operation: "shutdown"))
        }
    }

    /// Reads and throws away what arrives until the peer ends the stream (after `stopReading`
    /// too), or until it has sent nothing for `quietPeriod`: an idle peer may not notice the
    /// FIN until it next sends, and with nothing unread, closing sends no reset.
    func discardUntilEnd(quietPeriod: Duration) async throws {
        if readingStoppedByCaller {
            readingStoppedByCaller = false
            endOfStream = nil
        }
        while true {
            if pendingRead == nil && unreadBytesInKernel() == 0 {
                if reading {
                    uv_read_stop(stream)  // let the kernel count what arrives while we wait
                    reading = false
                }
                try await loop.clock.sleep(for: quietPeriod)
                guard isOpen else { throw closedError("read") }
                if unreadBytesInKernel() == 0 { return }
            }
            guard try await readCount() > 0 else { return }
            bufferBusy = false  // discarded
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

    /// Ends reading for good without closing: the pending read, if any, sees the end of the stream.
    func stopReading() {
        guard isOpen, endOfStream == nil else { return }
        if reading { uv_read_stop(stream) }
        reading = false
        endOfStream = Int(UV_EOF.rawValue)
        readingStoppedByCaller = true
        if pendingRead != nil {  // a chunk no read has taken yet: not read, like what follows it
            pendingRead = nil
            bufferBusy = false
        }
        if let waiter = readWaiter.take() { waiter.resume(returning: 0) }
    }

    // MARK: Closing and cancellation

    /// Closes the handle; waiters end with `reason` (nil: reads see end of stream, the
    /// others a closed-handle error). Memory is freed in the close callback.
    func close(reason: (any Error)?) {
        guard isOpen else { return }
        isOpen = false
        closeReason = reason
        if reading { uv_read_stop(stream) }
        reading = false
        acceptWaiter.take()?.resume(throwing: closedError("accept"))
        if let waiter = readWaiter.take() {
            if reason == nil { waiter.resume(returning: 0) } else { waiter.resume(throwing: reason!) }
        }
        // Pending connect and writes are answered by their callbacks, with ECANCELED.
        handle.pointee.data = nil
        uv_close(clibuv_tcp_as_handle(handle), tcpClosedCallback)
    }

    func closeForShutdown() { close(reason: CancellationError()) }

    /// Runs `start` on the loop with a continuation; cancelling the task closes the socket.
    private func withCancellation<T>(
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

/// One `uv_write`: the request and a copy of the bytes, both alive until libuv calls back.
final class TCPWrite {
    // The request and byte copy live until libuv's write callback; `release()` frees both there.
    let request: UnsafeMutablePointer<uv_write_t>
    let bytes: UnsafeMutableRawBufferPointer
    let waiter: UnsafeContinuation<Void, any Error>?
    let socket: TCPSocket

    init(socket: TCPSocket, bytes source: ArraySlice<UInt8>, waiter: UnsafeContinuation<Void, any Error>?) {
        self.socket = socket
        self.waiter = waiter
        request = .allocate(capacity: 1)
        bytes = .allocate(byteCount: max(source.count, 1), alignment: 1)
        source.withUnsafeBytes { bytes.copyMemory(from: $0) }
        // Unretained: the socket keeps this write in `writes` until libuv's write callback.
        request.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    func release() {
        request.deallocate()
        bytes.deallocate()
    }
}

// A stream pointer libuv hands to a callback, valid for the call.
private func socket(of handle: UnsafeMutablePointer<uv_stream_t>?) -> TCPSocket? {
    guard let data = handle?.pointee.data else { return nil }
    // `data` is set only while the socket is open (close() clears it).
    return Unmanaged<TCPSocket>.fromOpaque(data).takeUnretainedValue()
}

private let tcpConnectionCallback: uv_connection_cb = { server, status in
    socket(of: server)?.connectionArrived(status: status)
}

private let tcpConnectCallback: uv_connect_cb = { request, status in
    // The request's socket keeps it in `connectRequest` until this callback.
    let owner = Unmanaged<TCPSocket>.fromOpaque(request!.pointee.data).takeUnretainedValue()
    owner.connected(status: status, request: request!)
}

private let tcpAllocCallback: uv_alloc_cb = { handle, _, buffer in
    // libuv allocates only for a reading socket, which is open, so `data` is set.
    let owner = Unmanaged<TCPSocket>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
    if let memory = owner.allocate() {
        buffer!.pointee = uv_buf_init(memory.assumingMemoryBound(to: CChar.self), UInt32(TCPSocket.readBufferSize))
    } else {
        buffer!.pointee = uv_buf_init(nil, 0)
    }
}

private let tcpReadCallback: uv_read_cb = { stream, count, _ in
    socket(of: stream)?.received(count: count)
}

private let tcpWriteCallback: uv_write_cb = { request, status in
    // The socket keeps the write in `writes` until this callback.
    let write = Unmanaged<TCPWrite>.fromOpaque(request!.pointee.data).takeUnretainedValue()
    write.socket.written(write, status: status)
}

private let tcpShutdownCallback: uv_shutdown_cb = { request, status in
    // The request was allocated by shutdownWriting(); its socket is alive until this callback.
    let owner = Unmanaged<TCPSocket>.fromOpaque(request!.pointee.data).takeUnretainedValue()
    request!.deallocate()
    owner.shutDown(status: status)
}

private let tcpClosedCallback: uv_close_cb = { handle in
    // The uv_loop_t's data is its UVLoop, which outlives every handle on it.
    let loop = Unmanaged<UVLoop>.fromOpaque(handle!.pointee.loop.pointee.data).takeUnretainedValue()
    handle!.withMemoryRebound(to: uv_tcp_t.self, capacity: 1) { $0.deallocate() }
    loop.handleFreed()
}
