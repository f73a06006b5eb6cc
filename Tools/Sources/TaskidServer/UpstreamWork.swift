import Synchronization
import TaskIdentity
import UVLoop

/// Why an upstream run failed on its own terms; `TASK.PHASE` shows it as `failed(…)`.
/// A value type; any thread.
package enum UpstreamError: Error, Equatable, CustomStringConvertible {
    /// The connection was not established within the connect time-out.
    case connectTimedOut(milliseconds: Int)
    /// The reply did not arrive within the reply time-out.
    case replyTimedOut(milliseconds: Int)
    /// As many upstream connections as the cap allows were open; the run did not open another.
    case tooManyConnections(limit: Int)
    /// The upstream server closed the connection before replying.
    case closedBeforeReply

    package var description: String {
        switch self {
        case .connectTimedOut(let milliseconds): return "upstream connect timed out after \(milliseconds) ms"
        case .replyTimedOut(let milliseconds): return "upstream reply timed out after \(milliseconds) ms"
        case .tooManyConnections(let limit): return "upstream connections at their cap (\(limit))"
        case .closedBeforeReply: return "upstream closed the connection before replying"
        }
    }
}

/// How upstream runs are bounded: the time-outs, and a cap on the connections open at once,
/// shared by every shard. Any thread.
package final class UpstreamLimits: Sendable {
    let connectTimeout: Duration
    let replyTimeout: Duration
    let maxConnections: Int
    private let openConnections = Atomic<Int>(0)

    init(connectTimeoutMilliseconds: Int, replyTimeoutMilliseconds: Int, maxConnections: Int) {
        connectTimeout = .milliseconds(connectTimeoutMilliseconds)
        replyTimeout = .milliseconds(replyTimeoutMilliseconds)
        self.maxConnections = maxConnections
    }

    /// Upstream connections open (or being opened) now. Any thread.
    package var openCount: Int { openConnections.load(ordering: .relaxed) }

    /// Takes one connection slot; false at the cap. Any thread.
    func acquire() -> Bool {
        var current = openConnections.load(ordering: .relaxed)
        while current < maxConnections {
            let (exchanged, original) = openConnections.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives a slot back. Any thread.
    func release() { openConnections.subtract(1, ordering: .relaxed) }

    /// One upstream run: connect, send `PING` (with `message`: the run's fencing token), read the reply, each step within its time-out
    /// and the connection within the cap. Cancellation (a newer SET) closes the connection.
    /// On `loop`, from a run of that loop's registry.
    /// - Throws: `UpstreamError`, `LoopError` (e.g. `ECONNREFUSED`), `CancellationError`.
    func ping(host: String, port: Int, on loop: UVLoop, message: String? = nil) async throws {
        guard acquire() else { throw UpstreamError.tooManyConnections(limit: maxConnections) }
        defer { release() }
        let connection = try await Self.within(
            connectTimeout, on: loop, else: .connectTimedOut(milliseconds: connectTimeout.milliseconds)
        ) {
            try await loop.connect(host: host, port: port)
        }
        defer { connection.close() }
        let reply = try await Self.within(
            replyTimeout, on: loop, else: .replyTimedOut(milliseconds: replyTimeout.milliseconds)
        ) { () async throws -> Bool in
            try await connection.write(Array((message.map { "PING \($0)" } ?? "PING").utf8) + [13, 10])
            return try await connection.read() != nil
        }
        guard reply else { throw UpstreamError.closedBeforeReply }
    }

    /// `body`'s result if it finishes within `timeout`; otherwise cancels it (cancelling a TCP
    /// operation closes its connection) and throws `error`. Both children inherit the run's
    /// loop as their executor, so `body`'s TCP calls stay on the loop thread.
    private static func within<Result: Sendable>(
        _ timeout: Duration, on loop: UVLoop, else error: UpstreamError,
        _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await loop.clock.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else { throw error }
            return result
        }
    }
}

extension Duration {
    /// Whole milliseconds, for messages.
    fileprivate var milliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }
}
