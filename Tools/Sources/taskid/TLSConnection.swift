import COpenSSL
import UVLoop

/// A TLS session over a `TCPConnection`, through OpenSSL with memory buffers: the socket's
/// bytes go into OpenSSL, and what OpenSSL writes goes out through the connection's own
/// non-blocking writes, so libuv keeps the I/O and OpenSSL only encrypts and decrypts. The
/// handshake happens on the first read.
///
/// The thread of its connection's loop only (the server's front loop): it is not `Sendable`.
final class TLSConnection: ClientStream {
    /// The connection under the session; closing it ends the session.
    let connection: TCPConnection
    private let tls: TLSContext
    /// Owned: freed in `deinit`, with the two memory buffers it owns.
    private let session: OpaquePointer
    /// Ciphertext from the socket, for OpenSSL to read. Owned by `session`.
    private let incoming: OpaquePointer
    /// Ciphertext OpenSSL wrote, for the socket. Owned by `session`.
    private let outgoing: OpaquePointer
    /// The peer sent close_notify: reads end.
    private var peerClosed = false

    /// Plaintext encrypted per `SSL_write`: a large reply goes out in pieces of this size, so
    /// OpenSSL's buffer never holds a whole encrypted copy before the socket gets it. Any
    /// thread.
    static let encryptionPiece = 256 * 1024

    /// Starts a session on `connection`: a server's (it waits for the client's hello) or a
    /// client's (its first read sends the hello) by `tls`'s kind.
    ///
    /// Loop thread only. - Throws: `TLSSetupError` when OpenSSL cannot make the session.
    init(_ connection: TCPConnection, tls: TLSContext, serverName: String? = nil) throws(TLSSetupError) {
        guard let session = SSL_new(tls.context), let incoming = BIO_new(BIO_s_mem()),
            let outgoing = BIO_new(BIO_s_mem())
        else { throw TLSSetupError(description: "OpenSSL cannot make a TLS session: \(TLSContext.drainErrors())") }
        // An empty buffer means "more may come", not the end of the stream.
        _ = copenssl_bio_set_mem_eof_return(incoming, -1)
        _ = copenssl_bio_set_mem_eof_return(outgoing, -1)
        SSL_set_bio(session, incoming, outgoing)
        // An idle session gives its record buffers back (about 34 KiB), which matters with
        // thousands of clients connected.
        _ = copenssl_set_mode(session, Int(SSL_MODE_RELEASE_BUFFERS))
        if tls.isServer {
            SSL_set_accept_state(session)
        } else {
            SSL_set_connect_state(session)
            if let serverName { _ = copenssl_set_tlsext_host_name(session, serverName) }
        }
        self.connection = connection
        self.tls = tls
        self.session = session
        self.incoming = incoming
        self.outgoing = outgoing
    }

    deinit { SSL_free(session) }

    /// Decrypts the next bytes that arrive (up to 64 KiB) and hands them to `body`; `nil` at the
    /// end of the stream (the peer's close_notify, or the connection's end). Runs the handshake
    /// first, and answers what the peer's records ask (a key update) on the way.
    ///
    /// Loop thread only; one read at a time. The bytes are valid only inside `body`.
    /// - Throws: `TLSSessionError` for a failed handshake or a corrupt record (the alert is
    ///   sent first); as `TCPConnection.read`; what `body` throws.
    func read<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result? {
        while true {
            let count = try decrypt()
            if count > 0 { return try body(UnsafeRawBufferPointer(rebasing: tls.plaintext[..<count])) }
            if peerClosed { return nil }
            let arrived = try await connection.read { bytes in
                // A memory buffer grows as needed: the write takes every byte.
                BIO_write(incoming, bytes.baseAddress, Int32(bytes.count))
            }
            guard arrived != nil else { return nil }
        }
    }

    /// Runs the handshake to its end (a read does it too; this is for a session that sends
    /// before it reads).
    ///
    /// Loop thread only; no read pending. - Throws: `TLSSessionError` for a refused handshake
    /// (the alert is sent first) or a peer that closed during it; as `TCPConnection.read`.
    func handshake() async throws {
        while true {
            let result = SSL_do_handshake(session)
            let error = SSL_get_error(session, result)
            let failure = result == 1 || error == SSL_ERROR_WANT_READ ? nil : TLSContext.drainErrors()
            try sendCiphertext()
            if result == 1 { return }
            if let failure { throw TLSSessionError(description: failure) }
            let arrived = try await connection.read { bytes in
                BIO_write(incoming, bytes.baseAddress, Int32(bytes.count))
            }
            guard arrived != nil else { throw TLSSessionError(description: "the peer closed during the handshake") }
        }
    }

    /// Decrypts what has arrived into the shared plaintext buffer, and sends what OpenSSL wrote
    /// meanwhile (handshake messages, alerts). Returns how many bytes it decrypted.
    private func decrypt() throws -> Int {
        var count = 0
        defer { try? sendCiphertext() }
        while count < TLSContext.plaintextCapacity && !peerClosed {
            let read = SSL_read(
                session, tls.plaintext.baseAddress! + count, Int32(TLSContext.plaintextCapacity - count))
            if read > 0 {
                count += Int(read)
                continue
            }
            switch SSL_get_error(session, read) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return count
            case SSL_ERROR_ZERO_RETURN: peerClosed = true
            default: throw TLSSessionError(description: TLSContext.drainErrors())
            }
        }
        return count
    }

    /// Encrypts `bytes` and sends them as `TCPConnection.send` does: what the socket takes now
    /// is written at once, the rest queued.
    ///
    /// Loop thread only. - Throws: `LoopError` as `TCPConnection.send`; `TLSSessionError` when
    /// OpenSSL cannot encrypt (the session failed earlier).
    func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { plaintext in
            var offset = 0
            while offset < plaintext.count {
                let piece = min(plaintext.count - offset, Self.encryptionPiece)
                let written = SSL_write(session, plaintext.baseAddress! + offset, Int32(piece))
                guard written > 0 else { throw TLSSessionError(description: TLSContext.drainErrors()) }
                offset += Int(written)
                try sendCiphertext()
            }
        }
    }

    /// Hands what OpenSSL has written to the socket.
    private func sendCiphertext() throws(LoopError) {
        let pending = Int(copenssl_bio_pending(outgoing))
        guard pending > 0 else { return }
        let ciphertext = [UInt8](unsafeUninitializedCapacity: pending) { buffer, initialized in
            initialized = max(0, Int(BIO_read(outgoing, buffer.baseAddress, Int32(pending))))
        }
        try connection.send(ciphertext)
    }

    /// Encrypts `bytes` and returns once the socket has taken them.
    ///
    /// Loop thread only. - Throws: as `send(_:)` and `TCPConnection.flush()`.
    func write(_ bytes: [UInt8]) async throws {
        // A client writes first: its handshake must be over before the first record.
        if SSL_is_init_finished(session) == 0 { try await handshake() }
        try send(bytes)
        try await connection.flush()
    }

    /// Ends the session as `TCPConnection.finishWriting` ends a stream: close_notify after
    /// the queued records, then the end of the stream, then what the peer still sends is read
    /// and dropped until it closes or goes quiet.
    ///
    /// Loop thread only; once, with no read pending. - Throws: as
    /// `TCPConnection.finishWriting`.
    func finishWriting(quietPeriod: Duration = .milliseconds(100)) async throws {
        _ = SSL_shutdown(session)
        try sendCiphertext()
        try await connection.finishWriting(quietPeriod: quietPeriod)
    }
}
