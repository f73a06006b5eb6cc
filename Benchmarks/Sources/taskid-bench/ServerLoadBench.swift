import ArgumentParser
import Foundation
import UVLoop

/// The open-loop generator for `taskid serve`: SET requests at a fixed offered rate (each a new
/// identity for its key), latency measured from each request's *intended* send time (so a
/// server that falls behind shows it: coordinated-omission correction), then a final check that
/// a GET of every key returns the id of its last SET: nothing lost, nothing stale.
struct ServerLoadBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server-load",
        abstract: "Open-loop SET load against taskid serve, with latency percentiles and a final GET check.")

    @Option(help: "Server address.") var host = "127.0.0.1"
    @Option(help: "Server port.") var port: Int
    @Option(help: "Offered identity changes (SETs) per second.") var rate = 100_000
    @Option(help: "Duration of the offered load.") var seconds = 10
    @Option(help: "Distinct keys.") var keys = 10_000
    @Option(help: "Connections the load is spread over.") var connections = 4
    @Option(name: .customLong("max-p99-us"), help: "Exit 1 if p99 latency exceeds this (0: no limit).")
    var maxP99Microseconds = 0
    @Flag(help: "Print JSON instead of a key=value line.") var json = false

    func validate() throws {
        guard (1...65_535).contains(port), rate > 0, seconds > 0, keys > 0, (1...256).contains(connections) else {
            throw ValidationError("--port, --rate, --seconds, --keys must be positive; --connections 1...256")
        }
    }

    func run() throws {
        let loop = UVLoop(name: "load")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let latency = LatencyRecorder()
        let (host, port, rate, total, keys, connectionCount) =
            (self.host, self.port, self.rate, self.rate * self.seconds, self.keys, self.connections)
        let outcome = try blockOn {
            try await Task(executorPreference: loop) { () throws -> LoadOutcome in
                var clients: [LoadConnection] = []
                for _ in 0..<connectionCount {
                    clients.append(LoadConnection(try await loop.connect(host: host, port: port)))
                }
                let readers = clients.map { client in
                    Task(executorPreference: loop) { try await client.readReplies(latency) }
                }
                // Pace: every loop turn, send what is due by now, one write per connection.
                var lastID = [Int?](repeating: nil, count: keys)
                var stream = IdentityStream()
                var progress = ProgressLine(label: "server-load")
                let start = monotonicNanoseconds()
                var sent = 0
                while sent < total {
                    let due = min(total, Int(Double(monotonicNanoseconds() - start) * Double(rate) / 1e9))
                    while sent < due {
                        let key = stream.nextSlot(keys)
                        lastID[key] = sent
                        let intended = start + UInt64(Double(sent) * 1e9 / Double(rate))
                        // A key always goes over the same connection, so its SETs arrive in order.
                        clients[key % connectionCount].queueSet(key: "k\(key)", id: String(sent), intended: intended)
                        sent += 1
                    }
                    for client in clients { try client.flush() }
                    progress.update(done: sent, of: total)
                    // Sleep a little rather than spin: the server shares these cores. (The
                    // system clock has finer resolution than the loop's millisecond timers;
                    // lateness lands in the measured latency, which counts from intended times.)
                    try await Task.sleep(for: .microseconds(50))
                }
                progress.finish()
                let sendSeconds = Double(monotonicNanoseconds() - start) / 1e9
                while clients.contains(where: { !$0.allAnswered }) { try await Task.sleep(for: .milliseconds(1)) }
                for client in clients { client.connection.close() }
                var replies = 0
                for reader in readers { replies += try await reader.value }
                let errors = clients.reduce(0) { $0 + $1.errorReplies }
                // Final check, on a connection of its own, once every task the SETs started has ended.
                let checker = LoadConnection(try await loop.connect(host: host, port: port))
                defer { checker.connection.close() }
                try await checker.waitUntilSettled()
                var lost = 0
                var stale = 0
                for batchStart in stride(from: 0, to: keys, by: 1000) {
                    let batch = (batchStart..<min(keys, batchStart + 1000)).filter { lastID[$0] != nil }
                    let results = try await checker.get(batch.map { "k\($0)" })
                    for (key, result) in zip(batch, results) {
                        if result == nil { lost += 1 } else if result != String(lastID[key]!) { stale += 1 }
                    }
                }
                return LoadOutcome(
                    sent: sent, replies: replies, errors: errors, lost: lost, stale: stale, sendSeconds: sendSeconds,
                    keysWritten: lastID.compactMap { $0 }.count)
            }.value
        }
        var report = RunReport()
        report.add("impl", "server-load")
        report.add("rate", rate)
        report.add("seconds", seconds)
        report.add("connections", connections)
        report.add("keys", keys)
        report.add("sent", outcome.sent)
        report.add("replies", outcome.replies)
        report.add("error_replies", outcome.errors)
        report.add("achieved_rate", Int(Double(outcome.sent) / outcome.sendSeconds))
        for (name, value) in latency.percentiles(prefix: "latency") where name != "latency_count" {
            report.add(name, value)
        }
        report.add("keys_checked", outcome.keysWritten)
        report.add("lost", outcome.lost)
        report.add("stale", outcome.stale)
        print(report.line(json: json))
        var failures: [String] = []
        if outcome.replies != outcome.sent || outcome.errors > 0 { failures.append("not every SET was answered +OK") }
        if outcome.lost > 0 || outcome.stale > 0 { failures.append("lost=\(outcome.lost) stale=\(outcome.stale)") }
        let p99 = latency.percentiles(prefix: "l").first { $0.0 == "l_p99_us" }?.1 ?? 0
        if maxP99Microseconds > 0 && p99 > maxP99Microseconds {
            failures.append("p99 \(p99) µs > \(maxP99Microseconds) µs")
        }
        if !failures.isEmpty { throw CorrectnessFailure(description: failures.joined(separator: "; ")) }
    }
}

struct LoadOutcome: Sendable {
    let sent: Int
    let replies: Int
    let errors: Int
    let lost: Int
    let stale: Int
    let sendSeconds: Double
    let keysWritten: Int
}

/// One client connection of the generator. Loop thread only.
final class LoadConnection: @unchecked Sendable {
    // @unchecked Sendable: used only by tasks that prefer the generator's loop, so on its thread.
    let connection: TCPConnection
    private var outgoing: [UInt8] = []
    private var intended = RingOfTimes()
    private(set) var errorReplies = 0
    private var replies = 0
    private var received: [UInt8] = []

    init(_ connection: TCPConnection) { self.connection = connection }

    func queueSet(key: String, id: String, intended time: UInt64) {
        outgoing.append(
            contentsOf: "*3\r\n$3\r\nSET\r\n$\(key.utf8.count)\r\n\(key)\r\n$\(id.utf8.count)\r\n\(id)\r\n".utf8)
        intended.append(time)
    }

    func flush() throws {
        guard !outgoing.isEmpty else { return }
        try connection.send(outgoing)
        outgoing.removeAll(keepingCapacity: true)
    }

    /// Every request sent so far has its reply.
    var allAnswered: Bool { intended.isEmpty }

    /// Reads SET replies (one line each), recording latency from each request's intended time,
    /// until the connection is closed; returns how many arrived.
    func readReplies(_ latency: LatencyRecorder) async throws -> Int {
        var atLineStart = true
        while true {
            let chunk: [UInt8]?
            do { chunk = try await connection.read() } catch { break }  // closed by the generator
            guard let chunk else { break }
            let now = monotonicNanoseconds()
            for byte in chunk {
                if atLineStart && byte == UInt8(ascii: "-") { errorReplies += 1 }
                atLineStart = byte == UInt8(ascii: "\n")
                if atLineStart, let sentAt = intended.popFirst() {
                    latency.record(nanoseconds: now &- sentAt)
                    replies += 1
                }
            }
        }
        return replies
    }

    /// Polls INFO until no action is running or waiting.
    func waitUntilSettled() async throws {
        while true {
            try await connection.write(Array("INFO\r\n".utf8))
            let reply = try await nextReply()
            if reply.contains("running_actions:0") && reply.contains("live_generations:0") { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// GETs `keys` in one pipelined batch; returns each key's committed id, or nil.
    func get(_ keys: [String]) async throws -> [String?] {
        var request: [UInt8] = []
        for key in keys { request.append(contentsOf: "*2\r\n$3\r\nGET\r\n$\(key.utf8.count)\r\n\(key)\r\n".utf8) }
        try await connection.write(request)
        var results: [String?] = []
        for _ in keys {
            let reply = try await nextReply()
            // An array [id, generation], or nil.
            if reply.hasPrefix("[") {
                results.append(String(reply.dropFirst().prefix { $0 != "," }))
            } else {
                results.append(nil)
            }
        }
        return results
    }

    /// The next whole reply, rendered as text: bulk strings bare, arrays as `[a,b]`, nil as "nil".
    private func nextReply() async throws -> String {
        while true {
            if let (reply, used) = Self.parse(received, from: 0) {
                received.removeFirst(used)
                return reply
            }
            guard let chunk = try await connection.read() else {
                throw CorrectnessFailure(description: "server closed")
            }
            received.append(contentsOf: chunk)
        }
    }

    private static func parse(_ bytes: [UInt8], from start: Int) -> (String, Int)? {
        guard start < bytes.count, let end = bytes[start...].firstIndex(of: 10), end > start else { return nil }
        let line = String(decoding: bytes[(start + 1)..<(end - 1)], as: UTF8.self)
        let next = end + 1
        switch bytes[start] {
        case UInt8(ascii: "$"):
            guard let length = Int(line) else { return nil }
            if length < 0 { return ("nil", next) }
            guard next + length + 2 <= bytes.count else { return nil }
            return (String(decoding: bytes[next..<(next + length)], as: UTF8.self), next + length + 2)
        case UInt8(ascii: "*"):
            guard let count = Int(line) else { return nil }
            var items: [String] = []
            var index = next
            for _ in 0..<max(0, count) {
                guard let (item, after) = parse(bytes, from: index) else { return nil }
                items.append(item)
                index = after
            }
            return ("[" + items.joined(separator: ",") + "]", index)
        default:
            return (line, next)
        }
    }
}

/// A FIFO of send times.
struct RingOfTimes {
    private var times: [UInt64] = []
    private var head = 0
    var isEmpty: Bool { head == times.count }
    mutating func append(_ time: UInt64) { times.append(time) }
    mutating func popFirst() -> UInt64? {
        guard head < times.count else { return nil }
        defer {
            head += 1
            if head > 65_536 && head * 2 > times.count {
                times.removeFirst(head)
                head = 0
            }
        }
        return times[head]
    }
}
