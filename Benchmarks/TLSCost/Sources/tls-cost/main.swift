// What TLS costs a RESP server per request, with each library it could use. One TLS 1.3 session
// (TLS_AES_128_GCM_SHA256, the test certificates of Tools/Tests/Fixtures/tls) in memory: a client
// (the system's OpenSSL, the same in every run) encrypts a pipeline of SET requests, the server
// decrypts them and encrypts one +OK per request, and the client decrypts the replies. Only the
// server's side is timed, in `serverTurn`, which callgrind can also count alone
// (--toggle-collect='*serverTurn*'):
//   --server openssl   the system's OpenSSL through memory buffers, as `taskid serve` runs it
//                      on libuv (Tools/Sources/TaskidServer/TLSConnection.swift)
//   --server nio-ssl   swift-nio-ssl's NIOSSLServerHandler (BoringSSL) in a NIO channel pipeline
// usage: tls-cost --server openssl|nio-ssl [--pipeline N] [--batches N]
// Prints one line: the server's nanoseconds per request and per batch.
// Exit codes: 0 measured, 1 a session failed, 2 bad usage.
import CBenchOpenSSL
import NIOCore
import NIOEmbedded
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func fail(_ message: String) -> Never {
    FileHandleOutput.error("tls-cost: \(message)")
    exit(1)
}

/// Writes to standard error without Foundation.
enum FileHandleOutput {
    static func error(_ text: String) {
        let line = text + "\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
}

/// OpenSSL's queued errors, as one line.
func openSSLErrors() -> String {
    var reasons: [String] = []
    var buffer = [CChar](repeating: 0, count: 256)
    while case let code = ERR_get_error(), code != 0 {
        ERR_error_string_n(code, &buffer, buffer.count)
        reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return reasons.joined(separator: "; ")
}

/// One OpenSSL session through two memory buffers: the client always, and the server in
/// `--server openssl`. It reads into a 64 KiB buffer and hands out ciphertext as fresh arrays,
/// as the server's `TLSConnection` does.
final class MemorySession {
    let session: OpaquePointer
    let incoming: OpaquePointer
    let outgoing: OpaquePointer
    let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(context: OpaquePointer, isServer: Bool) {
        guard let session = SSL_new(context), let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem())
        else { fail("no session: \(openSSLErrors())") }
        // BIO_set_mem_eof_return(bio, -1): an empty buffer means "more may come".
        _ = BIO_ctrl(incoming, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        _ = BIO_ctrl(outgoing, BIO_C_SET_BUF_MEM_EOF_RETURN, -1, nil)
        SSL_set_bio(session, incoming, outgoing)
        if isServer { SSL_set_accept_state(session) } else { SSL_set_connect_state(session) }
        self.session = session
        self.incoming = incoming
        self.outgoing = outgoing
    }

    deinit {
        SSL_free(session)
        plaintext.deallocate()
    }

    /// Takes ciphertext in and decrypts what it can; returns the plaintext byte count.
    func receive(_ ciphertext: [UInt8]) -> Int {
        if !ciphertext.isEmpty {
            _ = ciphertext.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        }
        var count = 0
        while count < plaintext.count {
            let read = SSL_read(session, plaintext.baseAddress! + count, Int32(plaintext.count - count))
            if read > 0 {
                count += Int(read)
                continue
            }
            let error = SSL_get_error(session, read)
            guard error == SSL_ERROR_WANT_READ else { fail("SSL_read: \(error) \(openSSLErrors())") }
            break
        }
        return count
    }

    /// Encrypts `bytes`; returns the ciphertext to send.
    func send(_ bytes: [UInt8]) -> [UInt8] {
        let written = bytes.withUnsafeBytes { SSL_write(session, $0.baseAddress, Int32($0.count)) }
        guard written == bytes.count else { fail("SSL_write: \(openSSLErrors())") }
        return pendingCiphertext()
    }

    func pendingCiphertext() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(outgoing))
        guard pending > 0 else { return [] }
        return [UInt8](unsafeUninitializedCapacity: pending) { buffer, initialized in
            initialized = Int(BIO_read(outgoing, buffer.baseAddress, Int32(pending)))
        }
    }

    var handshakeDone: Bool { SSL_is_init_finished(session) == 1 }
}

/// The server's side: decrypt a batch, encrypt its replies.
protocol BenchServer: AnyObject {
    /// Decrypts `ciphertext`; returns the plaintext bytes and what the server sends back meanwhile.
    func receive(_ ciphertext: [UInt8]) -> (plaintext: Int, outgoing: [UInt8])
    /// Encrypts `replies`; returns the ciphertext.
    func send(_ replies: [UInt8]) -> [UInt8]
}

final class OpenSSLServer: BenchServer {
    let session: MemorySession
    init(context: OpaquePointer) { session = MemorySession(context: context, isServer: true) }
    func receive(_ ciphertext: [UInt8]) -> (plaintext: Int, outgoing: [UInt8]) {
        let count = session.receive(ciphertext)
        return (count, session.pendingCiphertext())
    }
    func send(_ replies: [UInt8]) -> [UInt8] { session.send(replies) }
}

final class NIOSSLServer: BenchServer {
    let channel: EmbeddedChannel
    let allocator = ByteBufferAllocator()

    init(certificate: String, key: String) {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
            let configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            let context = try NIOSSLContext(configuration: configuration)
            channel = EmbeddedChannel(handler: NIOSSLServerHandler(context: context))
            _ = channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1))
        } catch {
            fail("swift-nio-ssl server: \(error)")
        }
    }

    func drainOutbound() -> [UInt8] {
        var bytes: [UInt8] = []
        do {
            while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
                bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
            }
        } catch { fail("swift-nio-ssl outbound: \(error)") }
        return bytes
    }

    func receive(_ ciphertext: [UInt8]) -> (plaintext: Int, outgoing: [UInt8]) {
        var count = 0
        do {
            if !ciphertext.isEmpty { try channel.writeInbound(allocator.buffer(bytes: ciphertext)) }
            while let buffer = try channel.readInbound(as: ByteBuffer.self) { count += buffer.readableBytes }
        } catch { fail("swift-nio-ssl inbound: \(error)") }
        return (count, drainOutbound())
    }

    func send(_ replies: [UInt8]) -> [UInt8] {
        channel.writeAndFlush(allocator.buffer(bytes: replies), promise: nil)
        return drainOutbound()
    }
}

/// One timed server turn: the batch decrypted, its replies encrypted. Not inlined, so that
/// callgrind can count it alone.
@inline(never)
func serverTurn(_ server: any BenchServer, _ ciphertext: [UInt8], _ replies: [UInt8]) -> (Int, [UInt8], [UInt8]) {
    let (plaintext, outgoing) = server.receive(ciphertext)
    return (plaintext, outgoing, server.send(replies))
}

func nanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

// MARK: - The run

var serverKind = ""
var pipeline = 16
var batches = 100_000
var arguments = CommandLine.arguments.dropFirst()
let usage = "usage: tls-cost --server openssl|nio-ssl [--pipeline N] [--batches N]"
while let argument = arguments.popFirst() {
    switch argument {
    case "--server": serverKind = arguments.popFirst() ?? ""
    case "--pipeline": pipeline = Int(arguments.popFirst() ?? "") ?? 0
    case "--batches": batches = Int(arguments.popFirst() ?? "") ?? 0
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        FileHandleOutput.error(usage)
        exit(2)
    }
}
guard ["openssl", "nio-ssl"].contains(serverKind), (1...1024).contains(pipeline), batches > 0 else {
    FileHandleOutput.error(usage)
    exit(2)
}

let fixtures: String = {
    // This file is <root>/Benchmarks/TLSCost/Sources/tls-cost/main.swift.
    let root = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).dropLast(5)
    return root.joined(separator: "/") + "/Tools/Tests/Fixtures/tls"
}()

guard let clientContext = SSL_CTX_new(TLS_client_method()) else { fail("no client context") }
guard SSL_CTX_load_verify_locations(clientContext, "\(fixtures)/ca.crt", nil) == 1 else {
    fail("cannot load \(fixtures)/ca.crt: \(openSSLErrors())")
}
SSL_CTX_set_verify(clientContext, SSL_VERIFY_PEER, nil)
// One cipher suite for both servers, so that the library is all that differs.
_ = SSL_CTX_set_ciphersuites(clientContext, "TLS_AES_128_GCM_SHA256")
_ = SSL_CTX_ctrl(clientContext, SSL_CTRL_SET_MIN_PROTO_VERSION, Int(TLS1_3_VERSION), nil)

let server: any BenchServer
if serverKind == "openssl" {
    guard let serverContext = SSL_CTX_new(TLS_server_method()),
        SSL_CTX_use_certificate_chain_file(serverContext, "\(fixtures)/server.crt") == 1,
        SSL_CTX_use_PrivateKey_file(serverContext, "\(fixtures)/server.key", SSL_FILETYPE_PEM) == 1
    else { fail("OpenSSL server context: \(openSSLErrors())") }
    server = OpenSSLServer(context: serverContext)
} else {
    server = NIOSSLServer(certificate: "\(fixtures)/server.crt", key: "\(fixtures)/server.key")
}
let client = MemorySession(context: clientContext, isServer: false)

// The handshake, carried between the two sides until the client has finished.
var toServer: [UInt8] = []
var rounds = 0
while !client.handshakeDone || !toServer.isEmpty {
    rounds += 1
    guard rounds < 20 else { fail("the handshake did not finish") }
    _ = SSL_do_handshake(client.session)
    toServer = client.pendingCiphertext()
    let (_, answer) = server.receive(toServer)
    toServer = []
    if !answer.isEmpty { _ = client.receive(answer) }
    if client.handshakeDone { toServer = client.pendingCiphertext() }
    if !toServer.isEmpty {
        // The server's session tickets (TLS 1.3) follow the client's Finished: the client reads them.
        let (_, tickets) = server.receive(toServer)
        if !tickets.isEmpty { _ = client.receive(tickets) }
    }
    toServer = []
}

var requests: [UInt8] = []
for index in 0..<pipeline {
    let key = "key:\(String(100_000 + index))"
    requests += Array("*3\r\n$3\r\nSET\r\n$\(key.utf8.count)\r\n\(key)\r\n$3\r\nxxx\r\n".utf8)
}
let replies = Array(String(repeating: "+OK\r\n", count: pipeline).utf8)

var serverNanoseconds: UInt64 = 0
for _ in 0..<batches {
    let ciphertext = client.send(requests)
    let start = nanoseconds()
    let (plaintext, outgoing, repliesCiphertext) = serverTurn(server, ciphertext, replies)
    serverNanoseconds += nanoseconds() - start
    guard plaintext == requests.count else { fail("the server decrypted \(plaintext) of \(requests.count) bytes") }
    let decrypted = client.receive(outgoing + repliesCiphertext)
    guard decrypted == replies.count else { fail("the client decrypted \(decrypted) of \(replies.count) bytes") }
}
let perBatch = Double(serverNanoseconds) / Double(batches)
print(
    "tls-cost: server \(serverKind), pipeline \(pipeline), \(batches) batches: "
        + "\(Int(perBatch / Double(pipeline))) ns per request, \(Int(perBatch)) ns per batch (server side only)")
