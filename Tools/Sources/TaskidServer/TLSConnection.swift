import COpenSSL
import TaskLoopCore
import UVLoop

/// A TLS session over a `TCPConnection`, through OpenSSL with memory buffers: the socket's
/// bytes go into OpenSSL, and what OpenSSL writes goes out through the connection's own
/// non-blocking writes, so libuv keeps the I/O and OpenSSL only encrypts and decrypts. The
/// handshake happens on the first read (or write, for a client).
///
/// A large reply is encrypted as the socket takes it: 1 MiB at once, the next once the socket
/// has written what was queued (a task of the session's, ended by `close`), so that encrypting
/// it neither stops the loop nor holds a second, encrypted copy of it. OpenSSL's buffers hold at
/// most about one record each way (16 KiB pieces in, 16 KiB records out).
///
/// The thread of `loop` only (checked: its state is in a `LoopBound`). `Sendable` so that its
/// encrypting task can hold it.
package final class TLSConnection: ClientStream, Sendable {
    /// The connection under the session; closing it ends the session.
    package let connection: TCPConnection
    private let loop: UVLoop
    private let state: LoopBound<TLSSessionState>

    /// Plaintext encrypted per `SSL_write`, and ciphertext handed to OpenSSL per `BIO_write`:
    /// one record's worth, so that neither memory buffer grows past about a record (they never
    /// shrink). Any thread.
    static let recordPiece = 16 * 1024
    /// Plaintext encrypted at once before waiting for the socket to take it. Any thread.
    package static let encryptAhead = 1 << 20

    /// Starts a session on `connection`: a server's (it waits for the client's hello) or a
    /// client's (its first write sends the hello) by `tls`'s kind. `serverName` is sent by a
    /// client for SNI.
    ///
    /// The thread of `loop` only. - Throws: `TLSSetupError` when OpenSSL cannot make the session.
    package init(_ connection: TCPConnection, tls: TLSContext, loop: UVLoop, serverName: String? = nil)
        throws(TLSSetupError)
    {
        self.connection = connection
        self.loop = loop
        state = LoopBound(try TLSSessionState(tls: tls, serverName: serverName), loop: loop)
    }

    /// Decrypts the next bytes that arrive (up to 64 KiB) and hands them to `body`; `nil` at the
    /// end of the stream (the peer's close_notify, or the connection's end). Runs the handshake
    /// first, and answers what the peer's records ask (a key update) on the way.
    ///
    /// Loop thread only; one read at a time. The bytes are valid only inside `body`.
    /// - Throws: `TLSSessionError` for a failed handshake or a corrupt record (the alert is
    ///   sent first); as `TCPConnection.read`; what `body` throws.
    package func read<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result? {
        let session = state.value
        while true {
            // Records OpenSSL holds already (a read that filled the buffer left some).
            if let result = try session.decryptHeld(sendingTo: connection, then: body) { return result }
            if session.peerClosed { return nil }
            let outcome = try await connection.read { ciphertext in
                try session.decrypt(ciphertext, sendingTo: connection, then: body)
            }
            guard let outcome else { return nil }
            if let result = outcome { return result }
        }
    }

    /// Runs the handshake to its end (a read does it too; this is for a side that sends before
    /// it reads).
    ///
    /// Loop thread only; no read pending. - Throws: `TLSSessionError` for a refused handshake
    /// (the alert is sent first) or a peer that closed during it; as `TCPConnection.read`.
    func handshake() async throws {
        let session = state.value
        while try !session.stepHandshake(sendingTo: connection) {
            let arrived = try await connection.read { session.take($0) }
            guard arrived != nil else { throw TLSSessionError(description: "the peer closed during the handshake") }
        }
    }

    /// Sends `bytes`, as `TCPConnection.send` does: up to `encryptAhead` of them encrypted and
    /// written (or queued) at once, the rest encrypted as the socket takes what is queued.
    ///
    /// Loop thread only. - Throws: `LoopError` as `TCPConnection.send`; `TLSSessionError` when
    /// OpenSSL cannot encrypt (the session failed earlier).
    package func send(_ bytes: [UInt8]) throws {
        let session = state.value
        guard !bytes.isEmpty else { return }
        session.enqueue(bytes)
        // Behind bytes still waiting: the encrypting task takes these too, in order.
        guard session.encrypting == nil else { return }
        try session.encryptWaiting(upTo: Self.encryptAhead, sendingTo: connection)
        guard session.waitingBytes > 0 else { return }
        session.encrypting = Task(executorPreference: loop) { await self.encryptAsTheSocketTakes() }
    }

    /// Encrypts what waits, a slice at a time, each once the socket has written what was queued;
    /// ends when nothing waits, or the connection fails (what waits is dropped).
    private func encryptAsTheSocketTakes() async {
        while state.value.waitingBytes > 0 {
            do {
                try await connection.flush()
                try state.value.encryptWaiting(upTo: Self.encryptAhead, sendingTo: connection)
            } catch {
                state.value.dropWaiting()
            }
        }
        state.value.encrypting = nil
    }

    /// Bytes sent and not yet taken by the socket: encrypted and queued, or still waiting to be
    /// encrypted. 0 once closed.
    ///
    /// Loop thread only.
    package var queuedWriteBytes: Int { connection.queuedWriteBytes + state.value.waitingBytes }

    /// Waits until every byte sent so far is encrypted and handed to the kernel.
    ///
    /// Loop thread only. - Throws: as `TCPConnection.flush()`, or `LoopError.closed` when the
    /// connection failed with bytes still to encrypt.
    package func flush() async throws {
        if let encrypting = state.value.encrypting {
            // The caller's cancellation (the drain's time-out, a client that never reads) reaches
            // the encrypting task, whose wait for the socket then ends and drops what waits.
            await withTaskCancellationHandler {
                await encrypting.value
            } onCancel: {
                encrypting.cancel()
            }
        }
        try await connection.flush()
    }

    /// Encrypts `bytes` and returns once the socket has taken them; a client's handshake runs
    /// first.
    ///
    /// Loop thread only. - Throws: as `send(_:)`, `handshake()` and `flush()`.
    package func write(_ bytes: [UInt8]) async throws {
        if !state.value.isHandshakeDone { try await handshake() }
        try send(bytes)
        try await flush()
    }

    /// Ends the session as `TCPConnection.finishWriting` ends a stream: every byte sent, then
    /// close_notify (once the handshake is done: a session still in it has nothing to close),
    /// then the end of the stream, then what the peer still sends is read and dropped until it
    /// closes or goes quiet.
    ///
    /// Loop thread only; once, with no read pending. - Throws: as `TCPConnection.finishWriting`.
    package func finishWriting(quietPeriod: Duration) async throws {
        try await flush()
        try state.value.sendCloseNotify(to: connection)
        try await connection.finishWriting(quietPeriod: quietPeriod)
    }

    /// Closes the connection and waits for the encrypting task to end (it ends at once: its
    /// socket is gone). Loop thread only.
    package func close() async {
        connection.close()
        if let encrypting = state.value.encrypting { await encrypting.value }
    }

    /// Whether the peer ended the session with close_notify (not just by closing the
    /// connection). Loop thread only.
    package var receivedCloseNotify: Bool { state.value.peerClosed }
}

/// One session's OpenSSL objects and what waits to be encrypted. The thread of its
/// `TLSConnection`'s loop only (kept in a `LoopBound`).
private final class TLSSessionState {
    /// Owned: freed in `deinit`, with the two memory buffers it owns.
    private let session: OpaquePointer
    /// Ciphertext from the socket, for OpenSSL to read. Owned by `session`.
    private let incoming: OpaquePointer
    /// Ciphertext OpenSSL wrote, for the socket. Owned by `session`.
    private let outgoing: OpaquePointer
    /// The peer sent close_notify: reads end.
    private(set) var peerClosed = false
    /// Replies sent and not yet encrypted, oldest first from `waitingHead`; `waitingOffset`
    /// bytes of that one are done. Small replies sent behind others are joined up to a record
    /// (`enqueue`), so a client that pipelines while a large reply waits adds no entry a request.
    private var waiting: [[UInt8]] = []
    private var waitingHead = 0
    private var waitingOffset = 0
    private(set) var waitingBytes = 0
    /// The task encrypting `waiting` as the socket takes it; nil when none runs.
    var encrypting: Task<Void, Never>?

    init(tls: TLSContext, serverName: String?) throws(TLSSetupError) {
        guard let session = SSL_new(tls.context) else {
            throw TLSSetupError(description: "OpenSSL cannot make a TLS session: \(TLSContext.drainErrors())")
        }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(session)
            throw TLSSetupError(description: "OpenSSL cannot make a TLS session's buffers: \(TLSContext.drainErrors())")
        }
        // An empty buffer means "more may come", not the end of the stream.
        _ = copenssl_bio_set_mem_eof_return(incoming, -1)
        _ = copenssl_bio_set_mem_eof_return(outgoing, -1)
        SSL_set_bio(session, incoming, outgoing)
        // Record buffers stay with the session: OpenSSL's SSL_MODE_RELEASE_BUFFERS, which frees
        // them while idle, was measured to leave more resident per idle connection (60.8 KiB
        // against 41.4, docs/SERVER.md), and no faster.
        if tls.isServer {
            SSL_set_accept_state(session)
        } else {
            SSL_set_connect_state(session)
            if let serverName { _ = copenssl_set_tlsext_host_name(session, serverName) }
        }
        self.session = session
        self.incoming = incoming
        self.outgoing = outgoing
    }

    deinit { SSL_free(session) }

    var isHandshakeDone: Bool { SSL_is_init_finished(session) == 1 }

    /// The most plaintext one read hands over.
    static let plaintextCapacity = 64 * 1024

    /// Hands ciphertext from the socket to OpenSSL (a memory buffer takes every byte).
    func take(_ ciphertext: UnsafeRawBufferPointer) {
        _ = BIO_write(incoming, ciphertext.baseAddress, Int32(ciphertext.count))
    }

    /// Decrypts the records OpenSSL holds already and hands them to `body`; nil when none is
    /// whole. `connection` gets what OpenSSL writes meanwhile.
    func decryptHeld<Result>(
        sendingTo connection: TCPConnection, then body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result? {
        try withPlaintextBuffer { plaintext in
            let count = try decrypt(into: plaintext, from: 0, sendingTo: connection)
            return count > 0 ? try body(UnsafeRawBufferPointer(rebasing: plaintext[..<count])) : nil
        }
    }

    /// Takes `ciphertext` from the socket a record's worth at a time, decrypting as it goes (so
    /// that OpenSSL's input buffer never holds more than about two records), and hands what it
    /// decrypted to `body`; nil when no record was whole yet.
    func decrypt<Result>(
        _ ciphertext: UnsafeRawBufferPointer, sendingTo connection: TCPConnection,
        then body: (UnsafeRawBufferPointer) throws -> Result
    ) throws -> Result? {
        try withPlaintextBuffer { plaintext in
            var count = 0
            var offset = 0
            while offset < ciphertext.count {
                let piece = min(ciphertext.count - offset, TLSConnection.recordPiece)
                take(UnsafeRawBufferPointer(rebasing: ciphertext[offset..<(offset + piece)]))
                offset += piece
                count += try decrypt(into: plaintext, from: count, sendingTo: connection)
            }
            return count > 0 ? try body(UnsafeRawBufferPointer(rebasing: plaintext[..<count])) : nil
        }
    }

    /// A buffer for one read's plaintext, for the time of `body`: no session keeps 64 KiB
    /// between reads.
    private func withPlaintextBuffer<Result>(_ body: (UnsafeMutableRawBufferPointer) throws -> Result) rethrows
        -> Result
    {
        try withUnsafeTemporaryAllocation(byteCount: Self.plaintextCapacity, alignment: 16, body)
    }

    /// Decrypts what OpenSSL holds into `plaintext` from `offset`, and sends what OpenSSL wrote
    /// meanwhile (handshake messages, alerts). Returns the bytes it decrypted.
    private func decrypt(
        into plaintext: UnsafeMutableRawBufferPointer, from offset: Int, sendingTo connection: TCPConnection
    ) throws -> Int {
        var count = offset
        defer { try? sendCiphertext(to: connection) }
        let capacity = plaintext.count
        // OpenSSL's error queue is per thread and shared by every session on it: a failure left
        // there by another call must not be read as this one's. (Within the loop, only a failing
        // read adds to it, and that ends the loop.)
        ERR_clear_error()
        while count < capacity && !peerClosed {
            let read = SSL_read(session, plaintext.baseAddress! + count, Int32(capacity - count))
            if read > 0 {
                count += Int(read)
                continue
            }
            switch SSL_get_error(session, read) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return count - offset
            case SSL_ERROR_ZERO_RETURN: peerClosed = true
            default: throw TLSSessionError(description: TLSContext.drainErrors())
            }
        }
        return count - offset
    }

    /// One step of the handshake, its messages sent: true once it is done.
    func stepHandshake(sendingTo connection: TCPConnection) throws -> Bool {
        ERR_clear_error()
        let result = SSL_do_handshake(session)
        let failure =
            result == 1 || SSL_get_error(session, result) == SSL_ERROR_WANT_READ ? nil : TLSContext.drainErrors()
        try sendCiphertext(to: connection)
        if let failure { throw TLSSessionError(description: failure) }
        return result == 1
    }

    /// Queues `bytes` to be encrypted, joined to the last reply waiting when both fit in a record.
    func enqueue(_ bytes: [UInt8]) {
        waitingBytes += bytes.count
        if waiting.count > waitingHead, waiting[waiting.count - 1].count + bytes.count <= TLSConnection.recordPiece {
            waiting[waiting.count - 1].append(contentsOf: bytes)
        } else {
            waiting.append(bytes)
        }
    }

    /// Encrypts up to `budget` bytes of what waits, a record at a time, each sent as it is made.
    func encryptWaiting(upTo budget: Int, sendingTo connection: TCPConnection) throws {
        defer {
            // Done entries are let go in bulk: removing the first each time moved every other.
            if waitingHead == waiting.count {
                waiting.removeAll(keepingCapacity: waiting.count <= 64)
                waitingHead = 0
            } else if waitingHead >= 64 && waitingHead * 2 >= waiting.count {
                waiting.removeFirst(waitingHead)
                waitingHead = 0
            }
        }
        var left = budget
        while left > 0, waitingHead < waiting.count {
            let first = waiting[waitingHead]
            let piece = min(first.count - waitingOffset, TLSConnection.recordPiece, left)
            ERR_clear_error()
            let written = first.withUnsafeBytes { SSL_write(session, $0.baseAddress! + waitingOffset, Int32(piece)) }
            guard written > 0 else { throw TLSSessionError(description: TLSContext.drainErrors()) }
            waitingOffset += Int(written)
            waitingBytes -= Int(written)
            left -= Int(written)
            if waitingOffset == first.count {
                waiting[waitingHead] = []
                waitingHead += 1
                waitingOffset = 0
            }
            try sendCiphertext(to: connection)
        }
    }

    /// Forgets what waits to be encrypted (the connection failed).
    func dropWaiting() {
        waiting = []
        waitingHead = 0
        waitingOffset = 0
        waitingBytes = 0
    }

    /// Queues close_notify, once the handshake is done, and sends it.
    func sendCloseNotify(to connection: TCPConnection) throws {
        guard isHandshakeDone else { return }
        ERR_clear_error()
        _ = SSL_shutdown(session)
        ERR_clear_error()
        try sendCiphertext(to: connection)
    }

    /// Hands what OpenSSL has written to the socket.
    private func sendCiphertext(to connection: TCPConnection) throws(LoopError) {
        let pending = Int(copenssl_bio_pending(outgoing))
        guard pending > 0 else { return }
        let ciphertext = [UInt8](unsafeUninitializedCapacity: pending) { buffer, initialized in
            initialized = max(0, Int(BIO_read(outgoing, buffer.baseAddress, Int32(pending))))
        }
        try connection.send(ciphertext)
    }
}
