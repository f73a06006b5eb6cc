import CLibUV

/// A socket's writing: `write` (through a request, awaited), `send` (at once, the rest queued),
/// `flush`, and the end of the stream (`shutdownWriting`). Loop thread only.
extension TCPSocket {
    /// Writes `bytes` through a write request and waits for libuv's callback.
    func write(_ bytes: [UInt8]) async throws {
        // Always through a request, even when the socket could take the bytes now: `write` is
        // a suspension point, so a task writing in a loop still lets the loop's other work run.
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            do { try self.queueWrite(bytes[...], waiter: continuation) } catch { continuation.resume(throwing: error) }
        }
    }

    /// Writes what the socket takes now and queues the rest (see `TCPConnection.send`).
    ///
    /// - Throws: `LoopError.handleClosed` once closed; `.calledOffLoopThread` off the loop
    ///   thread while open; a libuv error from the immediate write.
    func send(_ bytes: [UInt8]) throws(LoopError) {
        guard state.isOpen else { throw LoopError(.handleClosed, operation: "write") }
        guard loop.inLoop else { throw LoopError(.calledOffLoopThread, operation: "TCPConnection.send") }
        let written = try writeNow(bytes)
        if written == bytes.count { return }
        try queueWrite(bytes[written...], waiter: nil)
    }

    /// Writes what the socket takes now, when nothing is queued before it (`uv_try_write`);
    /// returns how many bytes that was. A write done here needs no request, no copy of the
    /// bytes and no change to the loop's poll registration (a completed `uv_write` costs an
    /// `epoll_ctl`), which was one syscall per reply batch of a busy server.
    private func writeNow(_ bytes: [UInt8]) throws(LoopError) -> Int {
        guard state.isOpen else { throw LoopError(.handleClosed, operation: "write") }
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
        guard state.isOpen else { throw LoopError(.handleClosed, operation: "write") }
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

    /// libuv's write callback for a queued write: ends its waiter and any `flush()` waiting.
    func written(_ write: TCPWrite, status: Int32) {
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

    /// Bytes libuv has queued and not written; 0 once closed. Loop thread only (checked while
    /// open).
    var queuedWriteBytes: Int { isOpen ? uv_stream_get_write_queue_size(stream) : 0 }

    /// Waits until `writes` is empty (libuv completes writes in order, so that is when every
    /// byte queued before the call is written).
    func flush() async throws {
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            guard self.state.isOpen else { return continuation.resume(throwing: self.closedError("flush")) }
            if self.writes.isEmpty { return continuation.resume() }
            self.flushWaiters.append(continuation)
        }
    }

    /// Sends FIN once the queued writes are done (`uv_shutdown`) and waits for libuv's callback.
    func shutdownWriting() async throws {
        try await withCancellation { (continuation: UnsafeContinuation<Void, any Error>) in
            guard self.state.isOpen else { return continuation.resume(throwing: self.closedError("shutdown")) }
            // libuv owns the request until its callback, which frees it (ECANCELED on close).
            let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
            // Unretained: this task holds the socket until the callback resumes it, and libuv
            // always calls it (ECANCELED on close, before the handle's close callback).
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

    /// libuv's shutdown callback.
    func shutDown(status: Int32) {
        guard let waiter = shutdownWaiter.take() else { return }
        if status == 0 {
            waiter.resume()
        } else if status == UV_ECANCELED.rawValue || !state.isOpen {
            waiter.resume(throwing: closedError("shutdown"))
        } else {
            waiter.resume(throwing: LoopError(.libuv(status), operation: "shutdown"))
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

    /// Frees the request and the bytes, in libuv's write callback (or when `uv_write` refused
    /// them). Loop thread only.
    func release() {
        request.deallocate()
        bytes.deallocate()
    }
}
