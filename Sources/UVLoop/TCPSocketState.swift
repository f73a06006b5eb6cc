import CLibUV

/// What a `TCPSocket`'s read side is doing, and whether the socket is open, as one value: each
/// case carries the data that exists in it (the waiting read's continuation, the size of the
/// chunk in the read buffer, the end of the stream), so that no combination of flags can
/// describe a socket that cannot exist.
///
/// ```
///   idle ──read()──▶ waiting ──chunk──▶ holding (taken) ──consumed──▶ idle
///    │                                        ▲
///    └──chunk, no read waiting──▶ holding ────┘ read()
///
///   idle, waiting, holding ──end of stream, error, stopReading()──▶ ended
///                          (holding keeps an end that arrives for after its chunk)
///   any open state ──close(reason:)──▶ closed
/// ```
///
/// A pure value: each `mutating func` is one event and returns what the socket must then do to
/// libuv and to the waiting read (`ReadAction`). Generic over the waiting read (`Waiter`: the
/// socket's continuation), so that the transitions are tested without sockets or tasks
/// (`TCPSocketStateTests`). Loop thread only, inside its socket.
enum TCPSocketState<Waiter> {
    /// The socket is open; `ReadSide` says what reading is doing.
    case open(ReadSide)
    /// `close(reason:)` ran. A read after it first gets what arrived before the close and no
    /// read took (`unread`), then the close: the end of the stream when `reason` is nil,
    /// otherwise `reason` thrown.
    case closed(reason: (any Error)?, unread: Unread)

    /// The read side of an open socket.
    enum ReadSide {
        /// No read waits and the read buffer is free. `libuvReading`: `uv_read_start` is in
        /// effect (it stays on between reads: stopping and restarting costs two `epoll_ctl`s).
        case idle(libuvReading: Bool)
        /// A read waits for the next chunk; libuv is reading.
        case waiting(Waiter)
        /// The read buffer holds a chunk of `count` bytes, so libuv gets no buffer (the bytes
        /// that follow stay in the kernel). `taken`: a read has it and its consumer is running;
        /// otherwise it arrived with no read waiting, and the next read takes it. `then`: what
        /// follows once the chunk is consumed.
        case holding(count: Int, taken: Bool, then: AfterChunk)
        /// The stream ended: `code` is `UV_EOF` or a libuv error, returned to every later read;
        /// libuv is not reading. `byCaller`: `stopReading()` ended it, not the peer, so
        /// `discardUntilEnd` may read again.
        case ended(code: Int, byCaller: Bool)
    }

    /// What follows a held chunk.
    enum AfterChunk: Equatable {
        /// libuv is still reading (it will be refused a buffer until the chunk is consumed).
        case reading
        /// libuv's reading was stopped (it was refused a buffer, `UV_ENOBUFS`).
        case paused
        /// The stream ended (`UV_EOF` or an error) after the chunk.
        case ended(code: Int)
    }

    /// What a closed socket still has for reads: a chunk no read took, and an end seen before
    /// the close.
    struct Unread: Equatable {
        var chunk: Int?
        var end: Int?
    }

    /// What the socket must do after an event, besides nothing.
    enum ReadAction {
        case none
        /// `uv_read_start`.
        case startLibuvReading
        /// `uv_read_stop`.
        case stopLibuvReading
        /// Resume the waiting read with a chunk's size (0: the end of the stream).
        case resume(Waiter, returning: Int)
        /// Resume the waiting read with an error.
        case fail(Waiter, throwing: any Error)
        /// `uv_read_stop`, then resume the waiting read with a chunk's size (0: the end).
        case stopLibuvReadingAndResume(Waiter, returning: Int)
        /// `uv_read_stop`, then resume the waiting read with an error.
        case stopLibuvReadingAndFail(Waiter, throwing: any Error)
    }

    /// A new socket: open, not reading.
    init() { self = .open(.idle(libuvReading: false)) }

    /// Whether `close(reason:)` has not run.
    var isOpen: Bool {
        if case .open = self { return true }
        return false
    }

    /// The error a closed socket's operations end with (nil: a plain close, or still open).
    var closeReason: (any Error)? {
        if case .closed(let reason, _) = self { return reason }
        return nil
    }

    /// Whether libuv may be given the read buffer (`uv_alloc_cb`): not while it holds a chunk.
    var readBufferIsFree: Bool {
        if case .open(.holding) = self { return false }
        return true
    }

    /// Whether a chunk waits for the next read.
    var hasUnreadChunk: Bool {
        switch self {
        case .open(.holding(_, let taken, _)): return !taken
        case .closed(_, let unread): return unread.chunk != nil
        case .open: return false
        }
    }

    // MARK: Events

    /// A read that can complete without waiting: the size of a chunk no read has taken (which
    /// the read now holds), or the code of the stream's end (`UV_EOF` or an error); nil when
    /// the read must wait (`readWaits(_:)`) or, on a closed socket, see the close.
    mutating func readWithoutWaiting() -> Int? {
        switch self {
        case .open(.holding(let count, false, let then)):
            self = .open(.holding(count: count, taken: true, then: then))
            return count
        case .open(.ended(let code, _)):
            return code
        case .closed(let reason, var unread):
            if let chunk = unread.chunk {
                unread.chunk = nil
                self = .closed(reason: reason, unread: unread)
                return chunk
            }
            return unread.end
        case .open(.idle), .open(.waiting), .open(.holding(_, true, _)):
            return nil
        }
    }

    /// A read waits for the next chunk with `continuation` (after `readWithoutWaiting()`
    /// answered nil). One read at a time.
    mutating func readWaits(_ continuation: Waiter) -> ReadAction {
        switch self {
        case .open(.idle(let libuvReading)):
            self = .open(.waiting(continuation))
            return libuvReading ? .none : .startLibuvReading
        case .closed(let reason, _):
            if let reason { return .fail(continuation, throwing: reason) }
            return .resume(continuation, returning: 0)
        case .open(.waiting), .open(.holding), .open(.ended):
            preconditionFailure("BUG DETECTED: a TCP read waits in state \(self)")
        }
    }

    /// `uv_read_start` failed: the waiting read ends with the error, and libuv is not reading.
    mutating func libuvReadingFailedToStart() -> Waiter? {
        guard case .open(.waiting(let continuation)) = self else { return nil }
        self = .open(.idle(libuvReading: false))
        return continuation
    }

    /// libuv's read callback: `count` bytes arrived in the read buffer (> 0), nothing this time
    /// (0), libuv was refused a buffer (`UV_ENOBUFS`), or the stream ended (`UV_EOF` or an
    /// error).
    mutating func received(_ count: Int) -> ReadAction {
        if count == 0 { return .none }  // EAGAIN: nothing this time
        if count == Int(UV_ENOBUFS.rawValue) {
            // The buffer is held: let the kernel hold the bytes until the chunk is consumed.
            guard case .open(.holding(let held, let taken, .reading)) = self else { return .none }
            self = .open(.holding(count: held, taken: taken, then: .paused))
            return .stopLibuvReading
        }
        guard case .open(let side) = self else { return .none }  // closed: libuv calls no more
        if count > 0 {
            switch side {
            case .waiting(let continuation):
                self = .open(.holding(count: count, taken: true, then: .reading))
                return .resume(continuation, returning: count)
            case .idle:
                self = .open(.holding(count: count, taken: false, then: .reading))
                return .none
            case .holding, .ended:
                // libuv reads only into a buffer it was given, and is not reading once ended.
                assertionFailure("BUG DETECTED: \(count) bytes arrived in state \(self)")
                return .none
            }
        }
        // The end of the stream or an error: nothing more will come.
        switch side {
        case .waiting(let continuation):
            self = .open(.ended(code: count, byCaller: false))
            if count == Int(UV_EOF.rawValue) { return .stopLibuvReadingAndResume(continuation, returning: 0) }
            return .stopLibuvReadingAndFail(continuation, throwing: LoopError(.libuv(Int32(count)), operation: "read"))
        case .holding(let held, let taken, _):
            // libuv reports a hang-up after a short read without asking for a buffer.
            self = .open(.holding(count: held, taken: taken, then: .ended(code: count)))
        case .idle, .ended:
            self = .open(.ended(code: count, byCaller: false))
        }
        return .stopLibuvReading
    }

    /// The consumer of a taken chunk is done with the read buffer (or discarded the chunk).
    mutating func consumed() {
        guard case .open(.holding(_, true, let then)) = self else { return }
        switch then {
        case .reading: self = .open(.idle(libuvReading: true))
        case .paused: self = .open(.idle(libuvReading: false))
        case .ended(let code): self = .open(.ended(code: code, byCaller: false))
        }
    }

    /// `stopReading()`: reading ends as at the end of the stream, without closing. A chunk no
    /// read took is dropped (not read, like the bytes after it); an end already seen stays.
    mutating func stopReading() -> ReadAction {
        guard case .open(let side) = self else { return .none }
        let end = Int(UV_EOF.rawValue)
        switch side {
        case .idle(let libuvReading):
            self = .open(.ended(code: end, byCaller: true))
            return libuvReading ? .stopLibuvReading : .none
        case .waiting(let continuation):
            self = .open(.ended(code: end, byCaller: true))
            return .stopLibuvReadingAndResume(continuation, returning: 0)
        case .holding(_, _, .ended), .ended:
            return .none
        case .holding(_, _, let then):
            self = .open(.ended(code: end, byCaller: true))
            return then == .reading ? .stopLibuvReading : .none
        }
    }

    /// `discardUntilEnd` begins: a stream ended by `stopReading()` may be read again (libuv's
    /// reading is off).
    mutating func readAgainAfterStopReading() {
        if case .open(.ended(_, true)) = self { self = .open(.idle(libuvReading: false)) }
    }

    /// `discardUntilEnd` waits for the peer with nothing to read: libuv's reading stops, so
    /// that the kernel counts what arrives meanwhile.
    mutating func pauseIdleReading() -> ReadAction {
        guard case .open(.idle(true)) = self else { return .none }
        self = .open(.idle(libuvReading: false))
        return .stopLibuvReading
    }

    /// `close(reason:)`: nil when already closed; otherwise whether libuv's reading must be
    /// stopped, and the waiting read to end (with `reason`, or the end of the stream).
    mutating func close(reason: (any Error)?) -> ReadAction? {
        guard case .open(let side) = self else { return nil }
        var unread = Unread()
        var action = ReadAction.none
        switch side {
        case .idle(let libuvReading):
            if libuvReading { action = .stopLibuvReading }
        case .waiting(let continuation):
            if let reason {
                action = .stopLibuvReadingAndFail(continuation, throwing: reason)
            } else {
                action = .stopLibuvReadingAndResume(continuation, returning: 0)
            }
        case .holding(let count, let taken, let then):
            if !taken { unread.chunk = count }
            switch then {
            case .reading: action = .stopLibuvReading
            case .paused: break
            case .ended(let code): unread.end = code
            }
        case .ended(let code, _):
            unread.end = code
        }
        self = .closed(reason: reason, unread: unread)
        return action
    }
}
