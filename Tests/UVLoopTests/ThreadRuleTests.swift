import Dispatch
import Testing

@testable import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The members documented "loop thread only (checked)" check it: called from another thread
/// while their handle is open, they stop the process with a message naming the loop (or, for
/// `send`, throw), instead of racing the loop. Once closed, they touch no loop state, so a task
/// finishing after the loop's shutdown may still call them.
@Suite("Loop-thread-only members check the calling thread")
struct ThreadRuleTests {
    /// A loop-thread-only member, called from the test's own thread.
    enum OffLoopCall: String, CaseIterable, Codable, Sendable {
        case timerStart, timerStop, timerIsActive, timerClose
        case signalWatcherClose
        case listenerClose, listenerIsOpen, listenerLocalPort
        case connectionClose, connectionIsOpen, connectionStopReading, connectionQueuedWriteBytes

        /// Opens the object on a running loop, then calls the member here, off the loop.
        func perform() async throws {
            let loop = UVLoop(name: "thread-rules")
            try loop.start()
            let objects = try await OpenObjects.make(on: loop)
            switch self {
            case .timerStart: try objects.timer.start(after: .seconds(1))
            case .timerStop: objects.timer.stop()
            case .timerIsActive: _ = objects.timer.isActive
            case .timerClose: objects.timer.close()
            case .signalWatcherClose: objects.watcher.close()
            case .listenerClose: objects.listener.close()
            case .listenerIsOpen: _ = objects.listener.isOpen
            case .listenerLocalPort: _ = objects.listener.localPort
            case .connectionClose: objects.client.close()
            case .connectionIsOpen: _ = objects.client.isOpen
            case .connectionStopReading: objects.client.stopReading()
            case .connectionQueuedWriteBytes: _ = objects.client.queuedWriteBytes
            }
        }
    }

    @Test(arguments: OffLoopCall.allCases)
    func aCallFromAnotherThreadWhileOpenTraps(_ call: OffLoopCall) async throws {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [call] in
            // Errors are not failures here: only the trap below may end the process non-zero.
            do { try await call.perform() } catch { exit(0) }
            exit(0)  // the call returned: the check is missing
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("BUG DETECTED: called off the loop thread of UVLoop(thread-rules)"), "\(message)")
    }

    @Test func sendFromAnotherThreadThrows() async throws {
        try await withStartedLoop { loop in
            let objects = try await OpenObjects.make(on: loop)
            #expect(throws: LoopError(.calledOffLoopThread, operation: "TCPConnection.send")) {
                try objects.client.send([1, 2, 3])
            }
            // Nothing was sent: the peer reads only what the loop thread sends next.
            let received = try await Task(executorPreference: loop) { () -> [UInt8]? in
                try objects.client.send([4])
                return try await objects.server.read()
            }.value
            #expect(received == [4])
            try await objects.closeAll(on: loop)
        }
    }

    @Test func readFromAnotherThreadThrows() async throws {
        try await withStartedLoop { loop in
            let objects = try await OpenObjects.make(on: loop)
            await #expect(throws: LoopError(.calledOffLoopThread, operation: "TCP I/O")) {
                _ = try await objects.client.read()
            }
            try await objects.closeAll(on: loop)
        }
    }

    /// After the loop has closed everything (its shutdown), the members answer from any thread
    /// without trapping: closed objects touch no loop state.
    @Test func closedObjectsMayBeUsedFromAnyThread() async throws {
        let loop = UVLoop(name: "closed-objects")
        try loop.start()
        let objects = try await OpenObjects.make(on: loop)
        await loop.shutdown()
        #expect(!objects.listener.isOpen && !objects.client.isOpen && !objects.server.isOpen)
        #expect(objects.listener.localPort == 0)
        #expect(objects.client.queuedWriteBytes == 0)
        objects.client.stopReading()
        objects.client.close()
        objects.listener.close()
        objects.watcher.close()
        objects.timer.stop()
        objects.timer.close()
        #expect(!objects.timer.isActive)
        #expect(throws: LoopError(.shutDown, operation: "UVTimer.start")) { try objects.timer.start(after: .zero) }
        #expect(throws: LoopError(.handleClosed, operation: "write")) { try objects.client.send([1]) }
        #expect(loop.loopCloseResult == 0)
        #expect(loop.liveHandleCount == 0)
    }
}

/// One open object of each kind, made on the loop thread and handed to the test's thread,
/// which calls them only where a test says so (that is what the tests are about).
///
/// Unchecked `Sendable`: the timer is not Sendable; the tests call it off the loop on purpose.
struct OpenObjects: @unchecked Sendable {
    let timer: UVTimer
    let watcher: SignalWatcher
    let listener: TCPListener
    let client: TCPConnection
    let server: TCPConnection

    static func make(on loop: UVLoop) async throws -> OpenObjects {
        try await Task(executorPreference: loop) {
            let timer = try loop.makeUVTimer {}
            let watcher = try loop.watchSignal(SIGUSR2) { _ in }
            let listener = try loop.listen(host: "127.0.0.1", port: 0)
            async let accepted = listener.accept()
            let client = try await loop.connect(host: "127.0.0.1", port: listener.localPort)
            let server = try await accepted
            return OpenObjects(timer: timer, watcher: watcher, listener: listener, client: client, server: server)
        }.value
    }

    /// Closes every object on the loop thread, as their owner must.
    func closeAll(on loop: UVLoop) async throws {
        await Task(executorPreference: loop) {
            timer.close()
            watcher.close()
            listener.close()
            client.close()
            server.close()
        }.value
    }
}
