import CLibUV
import Testing
import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The public TCP API on real sockets over 127.0.0.1, written from its doc comments: each test
/// starts a loop, connects a client to a listener on an ephemeral port, drives both ends from
/// tasks on the loop thread, and shuts the loop down, checking that every handle was freed.
///
/// The tests wait only for events (awaits). The one fixed duration is each test's time limit,
/// which turns a hang into a failure naming the step that hung.
@Suite("TCP over loopback: connecting, reading, writing, backpressure, half-close, cancellation, errors")
struct TCPLoopbackTests {
    /// Bigger than what the kernel's socket buffers take from a writer whose peer does not read,
    /// so that part of a write of this size must wait in libuv's queue: Linux's send buffer grows
    /// to 4 MiB by default (`tcp_wmem`), and the peer's receive buffer grows only as it reads.
    /// 16 MiB leaves room for a machine with larger buffers.
    static let moreThanTheKernelBuffers = 16 << 20

    @Test("A client connects to a listener on an ephemeral port, and the listener accepts the client's peer")
    func acceptAndConnect() async throws {
        try await withLoopbackTest { loop, progress in
            progress.begin("listen on 127.0.0.1, port 0")
            let listener = try loop.listen(host: "127.0.0.1", port: 0)
            let port = listener.localPort
            #expect((1...65_535).contains(port), "listen: port 0 should be bound to an ephemeral port")
            #expect(listener.isOpen, "listen: the listener should be open")

            progress.begin("connect to 127.0.0.1:\(port) while the listener accepts")
            async let accepted = listener.accept()
            let client = try await loop.connect(host: "127.0.0.1", port: port)
            progress.begin("accept the connection")
            let server = try await accepted
            #expect(client.isOpen, "connect: the client's connection should be open")
            #expect(server.isOpen, "accept: the accepted connection should be open")

            progress.begin("each end's peer address")
            let clientSeen = try #require(server.peerAddress, "peerAddress: an open connection's peer is known")
            #expect(clientSeen.host == "127.0.0.1" && clientSeen.isLoopback)
            #expect(client.peerAddress?.port == port, "peerAddress: the client's peer is the listener's port")
            #expect(clientSeen.description == "127.0.0.1:\(clientSeen.port)")

            // A byte each way shows that the accepted connection is the client's peer.
            progress.begin("client sends a byte to the accepted connection")
            try await client.write([1])
            #expect(try await server.read() == [1], "server read: should get the client's byte")
            progress.begin("the accepted connection sends a byte to the client")
            try await server.write([2])
            #expect(try await client.read() == [2], "client read: should get the server's byte")

            progress.begin("close the listener and both ends")
            listener.close()
            #expect(!listener.isOpen, "listener close: should report closed")
            #expect(listener.localPort == 0, "listener close: localPort is documented as 0 once closed")
            client.close()
            server.close()
            #expect(!client.isOpen && !server.isOpen, "connection close: both ends should report closed")
            #expect(server.peerAddress == nil, "peerAddress: nil once closed")
        }
    }

    @Test("Bytes written on either end arrive exactly, in order, at the other")
    func readsAndWritesBothWays() async throws {
        try await withLoopbackTest { loop, progress in
            let (client, server) = try await Self.connectedPair(on: loop, progress)
            // Every byte value, so that none (0 included) is treated specially on the way.
            let request = (0...255).map { UInt8($0) } + Array("request".utf8)
            let reply = Array("reply".utf8) + (0...255).reversed().map { UInt8($0) }

            progress.begin("client writes \(request.count) bytes")
            try await client.write(request)
            progress.begin("server reads the client's bytes")
            let requestReceived = try await Self.readBytes(atLeast: request.count, from: server)
            let requestMismatch = Self.difference(requestReceived, request)
            #expect(requestMismatch == nil, "server read: the client's bytes differ")

            // The other way with `send` (written now or queued) and `flush`, the API's other writer.
            progress.begin("server sends \(reply.count) bytes and flushes")
            try server.send(reply)
            try await server.flush()
            #expect(server.queuedWriteBytes == 0, "server flush: nothing should stay queued")
            progress.begin("client reads the server's bytes")
            let replyReceived = try await Self.readBytes(atLeast: reply.count, from: client)
            let replyMismatch = Self.difference(replyReceived, reply)
            #expect(replyMismatch == nil, "client read: the server's bytes differ")

            client.close()
            server.close()
        }
    }

    @Test(
        "A write the peer does not read waits in the queue, then arrives intact as the peer reads, and the queue drains"
    )
    func largeWriteWithBackpressure() async throws {
        try await withLoopbackTest { loop, progress in
            let (client, server) = try await Self.connectedPair(on: loop, progress)
            let payload = Self.countingBytes(Self.moreThanTheKernelBuffers)

            progress.begin("client sends \(payload.count) bytes while the server does not read")
            try client.send(payload)
            let queued = client.queuedWriteBytes
            #expect(queued > 0, "send: part of a write bigger than the kernel's buffers should be queued")
            #expect(queued <= payload.count, "send: no more than the write can be queued")

            progress.begin("server reads all \(payload.count) bytes")
            let received = try await Self.readBytes(atLeast: payload.count, from: server)
            let mismatch = Self.difference(received, payload)
            #expect(mismatch == nil, "server read: the large write's bytes differ")

            progress.begin("client flushes its drained queue")
            try await client.flush()
            #expect(client.queuedWriteBytes == 0, "flush: the queue should be empty once the peer read everything")

            client.close()
            server.close()
        }
    }

    @Test("After finishWriting() the peer reads every byte, then the end of the stream, and can still write back")
    func halfCloseEndsTheStreamAfterTheData() async throws {
        try await withLoopbackTest { loop, progress in
            let (client, server) = try await Self.connectedPair(on: loop, progress)
            // More than the socket takes at once, so the FIN must wait behind queued writes.
            let payload = Self.countingBytes(Self.moreThanTheKernelBuffers)
            let reply = Array("written after the peer's end of stream".utf8)

            // The client's end of the stream completes only as the server reads, so it runs beside
            // the server. The server sends nothing until this task is done, so finishWriting()
            // returns after its quiet period with nothing discarded.
            progress.begin("client sends \(payload.count) bytes, then finishes writing")
            let clientFinishes = Task(executorPreference: loop) {
                try client.send(payload)
                #expect(client.queuedWriteBytes > 0, "send: part of the bytes should be queued before the FIN")
                try await client.finishWriting()
            }

            progress.begin("server reads the \(payload.count) bytes sent before the client's end of stream")
            let received = try await Self.readBytes(atLeast: payload.count, from: server)
            let mismatch = Self.difference(received, payload)
            #expect(mismatch == nil, "server read: the bytes before the end of stream differ")
            progress.begin("server reads the client's end of stream")
            let end = try await server.read()
            #expect(end == nil, "server read: nil (end of stream) should follow the client's bytes")

            progress.begin("client's finishWriting() returns")
            try await clientFinishes.value
            #expect(client.isOpen, "finishWriting: leaves the connection open (the caller closes it)")
            #expect(server.isOpen, "server: reading the end of stream leaves the connection open")

            // The half-closed connection still carries bytes the other way. The server has read
            // everything, so its close ends the stream (a FIN, not a reset).
            progress.begin("server writes to the half-closed client, then closes")
            try await server.write(reply)
            server.close()
            progress.begin("client reads the server's bytes after its own end of stream")
            let replyReceived = try await Self.readBytes(atLeast: reply.count, from: client)
            let replyMismatch = Self.difference(replyReceived, reply)
            #expect(replyMismatch == nil, "client read: the bytes written after its end of stream differ")
            progress.begin("client reads the server's end of stream")
            let clientEnd = try await client.read()
            #expect(clientEnd == nil, "client read: nil (end of stream) should follow the server's close")

            client.close()
        }
    }

    @Test(
        "Cancelling a task blocked in read() throws CancellationError, closes the connection, and ends the peer's stream"
    )
    func cancellingABlockedReadClosesTheConnection() async throws {
        try await withLoopbackTest { loop, progress in
            let (client, server) = try await Self.connectedPair(on: loop, progress)

            progress.begin("start a task that reads from the server, with nothing to read")
            let readerIsReading = Signal()
            let reader = Task(executorPreference: loop) {
                readerIsReading.fire()
                // Between `fire()` and the read's suspension there is no suspension point, so this
                // test's task, on the same loop thread, resumes only once the read is waiting.
                return try await server.read()
            }
            try await readerIsReading.wait()

            progress.begin("cancel the task blocked in read()")
            reader.cancel()
            switch await reader.result {
            case .success(let bytes):
                Issue.record("cancelled read: returned \(String(describing: bytes)) instead of throwing")
            case .failure(let error):
                #expect(error is CancellationError, "cancelled read: should throw CancellationError, threw \(error)")
            }
            #expect(!server.isOpen, "cancelled read: the connection should be closed")

            progress.begin("the peer reads after the cancelled read closed the connection")
            let end = try await client.read()
            #expect(end == nil, "peer read: nil (end of stream) should follow the close")

            client.close()
        }
    }

    @Test("Connecting to a port nothing listens on throws LoopError with libuv's ECONNREFUSED")
    func connectionRefused() async throws {
        let unlistened = try PortWithoutListener()
        let port = unlistened.port
        try await withLoopbackTest { loop, progress in
            progress.begin("connect to 127.0.0.1:\(port), bound with no listener")
            let error = await #expect(throws: LoopError.self, "connect: should fail with a LoopError") {
                _ = try await loop.connect(host: "127.0.0.1", port: port)
            }
            #expect(error?.code == .libuv(UV_ECONNREFUSED.rawValue), "connect: the code should be ECONNREFUSED's")
            #expect(error?.libuvCode == UV_ECONNREFUSED.rawValue, "connect: libuvCode should be ECONNREFUSED")
            #expect(error?.libuvName == "ECONNREFUSED", "connect: libuvName should name ECONNREFUSED")
        }
        withExtendedLifetime(unlistened) {}  // the port stays taken until the connect is refused
    }

    @Test("Closing a connection with a write queued fails the write's caller with handleClosed")
    func closingWithAWriteQueuedFailsTheWrite() async throws {
        try await withLoopbackTest { loop, progress in
            let (client, server) = try await Self.connectedPair(on: loop, progress)
            let payload = Self.countingBytes(Self.moreThanTheKernelBuffers)

            progress.begin("start a task writing \(payload.count) bytes the server does not read")
            let writerIsWriting = Signal()
            let writer = Task(executorPreference: loop) {
                writerIsWriting.fire()
                // No suspension point before the write is queued (see the read in the test above).
                try await client.write(payload)
            }
            try await writerIsWriting.wait()
            #expect(client.queuedWriteBytes > 0, "write: part of it should be queued before the close")

            progress.begin("close the client with the write queued")
            client.close()
            #expect(!client.isOpen, "close: the connection should report closed")
            #expect(client.queuedWriteBytes == 0, "close: queuedWriteBytes is documented as 0 once closed")
            progress.begin("the queued write's caller learns of the close")
            switch await writer.result {
            case .success:
                Issue.record("write: returned although the connection closed with it queued")
            case .failure(let error):
                let code = (error as? LoopError)?.code
                #expect(code == .handleClosed, "write: should throw LoopError handleClosed, threw \(error)")
            }

            server.close()
        }
    }
}

// MARK: - Helpers

extension TCPLoopbackTests {
    /// A client connected to a listener on an ephemeral port, and the connection the listener
    /// accepted; the listener is closed, as it has done its part.
    static func connectedPair(
        on loop: UVLoop, _ progress: Progress
    ) async throws -> (client: TCPConnection, server: TCPConnection) {
        progress.begin("listen on 127.0.0.1, port 0")
        let listener = try loop.listen(host: "127.0.0.1", port: 0)
        defer { listener.close() }
        progress.begin("connect to 127.0.0.1:\(listener.localPort) and accept")
        async let accepted = listener.accept()
        let client = try await loop.connect(host: "127.0.0.1", port: listener.localPort)
        return (client, try await accepted)
    }

    /// Reads until at least `count` bytes have arrived, in however many chunks, or the stream
    /// ends; returns all it read.
    static func readBytes(atLeast count: Int, from connection: TCPConnection) async throws -> [UInt8] {
        var received: [UInt8] = []
        received.reserveCapacity(count)
        while received.count < count {
            guard try await connection.read({ received.append(contentsOf: $0) }) != nil else { break }
        }
        return received
    }

    /// `count` bytes in which each byte says where it belongs: byte `i` is `i % 251`. 251 is
    /// prime, so bytes lost, repeated or reordered at a buffer's (power-of-two) boundary change
    /// the bytes from there on.
    static func countingBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var value: UInt8 = 0
        for index in bytes.indices {
            bytes[index] = value
            value = value == 250 ? 0 : value + 1
        }
        return bytes
    }

    /// Nil when `received` equals `expected`; otherwise where they first differ, short enough for
    /// a failure message (megabytes of bytes are not).
    static func difference(_ received: [UInt8], _ expected: [UInt8]) -> String? {
        if received == expected { return nil }
        let common = min(received.count, expected.count)
        guard let offset = (0..<common).first(where: { received[$0] != expected[$0] }) else {
            return "\(received.count) bytes instead of \(expected.count), equal up to the shorter"
        }
        return "\(received.count) bytes (expected \(expected.count)); first difference at offset \(offset): "
            + "\(received[offset]) instead of \(expected[offset])"
    }

    /// The step a test began last, read by its time limit and its error report to say where it
    /// stopped. Any thread.
    final class Progress: Sendable {
        private let step = Locked("setting up")

        func begin(_ name: String) { step.withLock { $0 = name } }
        var current: String { step.withLock { $0 } }
    }

    /// Runs `body` on a started loop, in a task on the loop's thread (where the TCP API must be
    /// used); the loop is then shut down and checked (`withStartedLoop`). An error `body` throws is
    /// reported with the step it was in. If `body` is not done within `timeLimit`, the test fails
    /// naming the step, and its task is cancelled and the loop shut down: shutdown ends every pending
    /// accept, connect, read and write, so the test ends even if cancellation does not.
    func withLoopbackTest(
        timeLimit: Duration = .seconds(60), sourceLocation: SourceLocation = #_sourceLocation,
        _ body: @escaping @Sendable (UVLoop, Progress) async throws -> Void
    ) async throws {
        enum Outcome: Sendable {
            case finished
            case threw(any Error)
            case timedOut
        }
        try await withStartedLoop(
            { loop in
                let progress = Progress()
                let outcome = await withTaskGroup(of: Outcome.self) { group in
                    group.addTask(executorPreference: loop) {
                        do {
                            try await body(loop, progress)
                            return .finished
                        } catch {
                            return .threw(error)
                        }
                    }
                    group.addTask {
                        // Cancelled, so ended at once, when `body` finishes first.
                        try? await Task.sleep(for: timeLimit)
                        return .timedOut
                    }
                    let first = await group.next()!
                    group.cancelAll()
                    if case .timedOut = first { await loop.shutdown() }
                    return first
                }
                switch outcome {
                case .finished:
                    break
                case .threw(let error):
                    Issue.record(error, "step \"\(progress.current)\" threw", sourceLocation: sourceLocation)
                case .timedOut:
                    Issue.record(
                        "step \"\(progress.current)\" did not finish within the \(timeLimit) time limit",
                        sourceLocation: sourceLocation)
                }
            }, sourceLocation: sourceLocation)
    }

    /// One event between two tasks: `wait()` returns once `fire()` has been called (before or after).
    struct Signal: Sendable {
        private let stream: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation

        init() { (stream, continuation) = AsyncStream.makeStream() }

        func fire() {
            continuation.yield()
            continuation.finish()
        }

        /// - Throws: `CancellationError` if the waiting task is cancelled before the event.
        func wait() async throws {
            for await _ in stream { return }
            throw CancellationError()
        }
    }

    /// A port on 127.0.0.1 held by a socket bound to it without listening, so that a connection to
    /// it is refused. Holding the port, rather than closing a listener and reusing its number, keeps
    /// another program from taking it meanwhile, and the kernel from giving it to the connecting
    /// socket, which would then connect to itself.
    final class PortWithoutListener {
        let port: Int
        private let descriptor: Int32

        init() throws {
            #if canImport(Glibc)
                let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #else
                let descriptor = socket(AF_INET, SOCK_STREAM, 0)
            #endif
            guard descriptor >= 0 else { throw PortError(operation: "socket", code: errno) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0  // the kernel picks a free port
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            // sockaddr_in viewed as the sockaddr the C API takes; scoped to the calls.
            let failedCall = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> String? in
                    if bind(descriptor, address, length) != 0 { return "bind" }
                    if getsockname(descriptor, address, &length) != 0 { return "getsockname" }
                    return nil
                }
            }
            if let failedCall {
                let code = errno
                close(descriptor)
                throw PortError(operation: failedCall, code: code)
            }
            self.descriptor = descriptor
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit { close(descriptor) }

        /// A socket call that failed while taking the port, with its `errno`.
        struct PortError: Error, CustomStringConvertible {
            let operation: String
            let code: Int32
            var description: String { "\(operation) on 127.0.0.1, port 0: \(String(cString: strerror(code)))" }
        }
    }
}
