import CLibUV

/// A listening TCP socket on a loop. Create it with `UVLoop.listen(host:port:backlog:)`.
///
/// Loop thread only: use it from a task that prefers the loop (or an actor pinned to it).
/// Cancelling a task waiting in `accept()` closes the listener.
///
/// Unchecked `Sendable`: loop-thread only (checked per call); Sendable so loop tasks can hold it across awaits.
public final class TCPListener: @unchecked Sendable {
    let socket: TCPSocket

    init(socket: TCPSocket) { self.socket = socket }

    /// The port the listener is bound to (useful after binding port 0); 0 once it is closed.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the listener is open).
    public var localPort: Int { socket.localPort }

    /// Waits for the next connection.
    ///
    /// - Throws: `CancellationError` if the task is cancelled (the listener is then closed) or
    ///   the loop shuts down; `LoopError` for a libuv error or a closed listener,
    ///   `.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only (checked); one `accept()` at a time.
    public func accept() async throws -> TCPConnection {
        TCPConnection(socket: try await socket.accept())
    }

    /// Stops listening and closes the socket. Idempotent.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the listener is open; once
    ///   closed, it does nothing on any thread).
    public func close() { socket.close(reason: nil) }

    /// Whether the listener is still open.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the listener is open).
    public var isOpen: Bool { socket.isOpen }
}

extension UVLoop {
    /// Listens on `host:port` (an IPv4 or IPv6 literal, or `localhost`; port 0 picks a free port).
    ///
    /// - Throws: `LoopError` (e.g. `EADDRINUSE`, `EINVAL` for a bad address), `.calledOffLoopThread`,
    ///   `.shutDown`.
    /// - Note: Loop thread only (checked).
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
}
