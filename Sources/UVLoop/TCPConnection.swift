import CLibUV

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

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
    ///   loop shuts down; `LoopError` for a libuv error (e.g. `ECONNRESET`) or a closed
    ///   connection, `.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only (checked); one `read()` at a time.
    public func read() async throws -> [UInt8]? {
        try await socket.read { Array($0) }
    }

    /// Reads the next bytes that arrive (up to 64 KiB) and hands them to `body` without copying
    /// them first; returns `body`'s result, or `nil` at the end of the stream. The bytes are
    /// valid only inside `body`.
    ///
    /// - Throws: as `read()`, or what `body` throws.
    /// - Note: Loop thread only (checked); one read at a time.
    public func read<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result? {
        try await socket.read(body)
    }

    /// Writes `bytes` and returns once libuv has written them to the socket.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed);
    ///   `LoopError` for a libuv error or a closed connection, `.calledOffLoopThread` off the
    ///   loop thread.
    /// - Note: Loop thread only (checked).
    public func write(_ bytes: [UInt8]) async throws {
        try await socket.write(bytes)
    }

    /// Writes `bytes` without waiting: what the socket takes now is written at once, the rest
    /// is queued and libuv keeps it until written. Watch `queuedWriteBytes` for a peer that
    /// does not read.
    ///
    /// - Throws: `LoopError`: the connection is closed, or the immediate write failed (e.g.
    ///   `EPIPE`, `ECONNRESET`); a queued write's failure closes nothing and is not reported.
    ///   `.calledOffLoopThread` off the loop thread while the connection is open.
    /// - Note: Loop thread only (checked: throws elsewhere).
    public func send(_ bytes: [UInt8]) throws(LoopError) {
        try socket.send(bytes)
    }

    /// Bytes queued for writing that the socket has not taken yet; 0 once closed.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the connection is open).
    public var queuedWriteBytes: Int { socket.queuedWriteBytes }

    /// Waits until no write is queued: every byte written or sent so far has been handed to the
    /// kernel (writes queued meanwhile are waited for too). Returns at once when nothing is
    /// queued. Handed to the kernel is not yet received: see `finishWriting()`.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed);
    ///   `LoopError` when the connection closes first or the last queued write fails,
    ///   `.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only (checked).
    public func flush() async throws {
        try await socket.flush()
    }

    /// Reads nothing more: a pending `read` returns `nil` as at the end of the stream, and so
    /// does every later one; bytes still arriving stay in the kernel. Writing goes on, so a
    /// server stopping gracefully can still deliver the replies it owes. Idempotent.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the connection is open; once
    ///   closed, it does nothing on any thread).
    public func stopReading() { socket.stopReading() }

    /// Ends the stream gracefully, so that the peer receives every byte written: sends the end
    /// of the stream (FIN) after the queued writes, then reads and discards what the peer
    /// still sends until it closes its side, or sends nothing for `quietPeriod` (an idle peer
    /// may not look at the connection until it next uses it). Closing with unread bytes would
    /// make the kernel reset the connection, and the peer could lose replies in flight. Close
    /// the connection afterwards; bound the wait by cancelling the task.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the connection is closed);
    ///   `LoopError` for a libuv error or a closed connection, `.calledOffLoopThread` off the
    ///   loop thread.
    /// - Note: Loop thread only (checked); call it once, with no read pending.
    public func finishWriting(quietPeriod: Duration = .milliseconds(100)) async throws {
        try await socket.shutdownWriting()
        try await socket.discardUntilEnd(quietPeriod: quietPeriod)
    }

    /// Whether the connection is still open.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the connection is open).
    public var isOpen: Bool { socket.isOpen }

    /// Closes the connection (a pending read returns `nil`, pending writes fail). Idempotent.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the connection is open; once
    ///   closed, it does nothing on any thread).
    public func close() { socket.close(reason: nil) }
}

extension UVLoop {
    /// Connects to `host:port` (an IPv4 or IPv6 literal, or `localhost`).
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the pending connect is closed);
    ///   `LoopError` (e.g. `ECONNREFUSED`), `.calledOffLoopThread`, `.shutDown`.
    /// - Note: Loop thread only (checked).
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
