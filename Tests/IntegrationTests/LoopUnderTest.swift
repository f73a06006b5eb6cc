import Foundation
import Testing
import UVLoop

#if NIO
    import NIOCore
    import NIOPosix
    import TaskLoopNIO
#endif

/// The loop kinds the conformance suite holds to one contract: libuv's, SwiftNIO's (with the
/// `NIO` trait) and the virtual-time test loop.
enum LoopKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case uv
    #if NIO
        case nio
    #endif
    case test

    var testDescription: String {
        switch self {
        case .uv: "UVLoop"
        #if NIO
            case .nio: "NIOTaskLoop"
        #endif
        case .test: "TestLoop"
        }
    }
}

/// A running loop of one kind, driven the same way whatever the kind, so that one test body
/// states the contract for all of them.
///
/// Time passes only where a test says so (`advance(by:)`): a virtual loop moves its clock, a
/// real one lets that much real time go by. Everything else a test waits for is an event
/// (a report, a task's value), never a time window.
final class LoopUnderTest: Sendable {
    let kind: LoopKind
    let loop: any TaskLoop
    private let finish: @Sendable () async throws -> Void
    private let passTime: @Sendable (Duration) async throws -> Void

    init(_ kind: LoopKind) throws {
        self.kind = kind
        switch kind {
        case .uv:
            let loop = UVLoop(name: "conformance")
            try loop.start()
            self.loop = loop
            finish = { await loop.shutdown() }
            passTime = { try await Task.sleep(for: $0) }
        #if NIO
            case .nio:
                let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                let loop = NIOTaskLoop(group.next())
                self.loop = loop
                finish = {
                    await loop.shutdown()
                    try await group.shutdownGracefully()
                }
                passTime = { try await Task.sleep(for: $0) }
        #endif
        case .test:
            let driver = TestLoopDriver()
            loop = driver.loop
            finish = { await driver.shutdown() }
            passTime = { await driver.advance(by: $0) }
        }
    }

    /// Lets `duration` of the loop's time pass: virtual time moves (firing what falls due, in
    /// order), real time is waited for. Any task.
    func advance(by duration: Duration) async throws { try await passTime(duration) }

    /// Shuts the loop down the way its owner does; returns once it has. Any task; once.
    func shutdown() async throws { try await finish() }
}

/// Drives a `TestLoop` from a thread of its own, which is therefore its loop thread: queued
/// work runs as soon as it is queued (as on a real loop), and time moves only on `advance`.
///
/// Unchecked `Sendable`: `commands` and `stopping` are behind `lock`; the loop is driven only by
/// the driver thread (its `run`/`advance`/`shutdown` trap anywhere else, which is the check).
final class TestLoopDriver: @unchecked Sendable {
    private(set) var loop: TestLoop!  // set by the driver thread before `init` returns
    private let lock = NSLock()
    private var commands: [(TestLoop) -> Void] = []
    private var stopping = false

    init() {
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            let loop = TestLoop()
            self.loop = loop
            ready.signal()
            drive(loop)
        }
        thread.name = "test-loop-driver"
        thread.start()
        ready.wait()
    }

    private func drive(_ loop: TestLoop) {
        while true {
            loop.run()
            let (next, stop) = lock.withLock { () -> ([(TestLoop) -> Void], Bool) in
                defer { commands = [] }
                return (commands, stopping)
            }
            for command in next { command(loop) }
            if stop && next.isEmpty { return }
            // Idle: look again shortly (work queued from other threads does not wake this thread).
            if next.isEmpty && loop.queuedWorkCount == 0 { usleep(50) }
        }
    }

    /// Runs `command` on the driver thread, after the work queued before it; returns once it ran.
    private func perform(_ command: @escaping (TestLoop) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.withLock {
                commands.append { loop in
                    command(loop)
                    continuation.resume()
                }
            }
        }
    }

    func advance(by duration: Duration) async { await perform { $0.advance(by: duration) } }

    func shutdown() async {
        await perform { $0.shutdown() }
        lock.withLock { stopping = true }
    }
}

/// What loop code reports to the test's task, in the order it reports it.
struct LoopReports: Sendable {
    let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init() { (stream, continuation) = AsyncStream.makeStream(of: String.self) }

    /// Any thread.
    func add(_ report: String) { continuation.yield(report) }

    /// The next `count` reports, waiting for each. Any task.
    func next(_ count: Int) async -> [String] {
        var iterator = stream.makeAsyncIterator()
        var reports: [String] = []
        for _ in 0..<count {
            guard let report = await iterator.next() else { break }
            reports.append(report)
        }
        return reports
    }
}
