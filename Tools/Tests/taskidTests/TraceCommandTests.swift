import Foundation
import Testing
import UVLoop

@testable import taskid

/// The registry's trace from a Redis client (`TASK.TRACE`) and from the command line
/// (`--trace FILE`), over two shards: JSON that parses, with a restart in it.
@Suite("TASK.TRACE and --trace")
struct TraceCommandTests {
    /// The runs of each track, as `generation phase`, from Trace Event JSON.
    private func runs(inTrace json: String) throws -> [String: [String]] {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let events = try #require(document["traceEvents"] as? [[String: Any]])
        var names: [Int: String] = [:]
        for event in events where event["ph"] as? String == "M" && event["name"] as? String == "thread_name" {
            names[event["tid"] as! Int] = (event["args"] as! [String: Any])["name"] as? String
        }
        var runs: [String: [String]] = [:]
        for event in events where event["ph"] as? String == "X" {
            let args = try #require(event["args"] as? [String: Any])
            let track = names[event["tid"] as! Int] ?? "?"
            runs[track, default: []].append("g\(args["generation"]!) \(args["phase"]!)")
        }
        return runs
    }

    /// Sets `key` to 1 and, once its run is running (polled), to 2: a restart. The work lasts
    /// a minute, so that the first run is still running whatever the machine's pace; the
    /// second is running when the trace is taken.
    private func restart(_ key: String, _ client: TestClient) async throws {
        try await client.send("SET \(key) 1\r\n")
        #expect(try await client.replies(1) == ["+OK"])
        try await waitUntilRunning(key, client)
        try await client.send("SET \(key) 2\r\n")
        #expect(try await client.replies(1) == ["+OK"])
        try await waitUntilRunning(key, client)
    }

    /// Polls `TASK.PHASE key` until its run is running (no fixed sleep).
    private func waitUntilRunning(_ key: String, _ client: TestClient) async throws {
        while true {
            try await client.send("TASK.PHASE \(key)\r\n")
            if try await client.replies(1) == ["+running"] { return }
            await Task.yield()
        }
    }

    /// A trace too large for the client's output limit is refused with an error before
    /// anything is sent, by its event count or by its JSON's size, and goes on recording: a
    /// refused STOP loses nothing, and the connection stays open.
    @Test func aTraceLargerThanTheOutputLimitIsRefusedAndKept() async throws {
        try await withServer({
            $0.outputBufferLimit.hardBytes = 8 * 1024  // room for 128 events by count
            $0.work = .sleep(milliseconds: 60_000)
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            // At least one event a SET (its declaration): 200 events, more than 128.
            try await client.send("TASK.TRACE START\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            try await client.send((0..<200).map { "SET k\($0) 1\r\n" }.joined())
            #expect(try await client.replies(200) == Array(repeating: "+OK", count: 200))
            try await client.send("TASK.TRACE DUMP\r\nTASK.TRACE STOP\r\nTASK.TRACE DUMP\r\n")
            let byCount = try await client.replies(3)
            for reply in byCount {
                #expect(reply.hasPrefix("-ERR the trace holds "), "\(reply)")
                #expect(reply.contains("recording goes on"))
            }
            // 120 events fit the count, but not as JSON (about 110 bytes each).
            try await client.send("TASK.TRACE START 120\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            try await client.send((0..<200).map { "SET j\($0) 1\r\n" }.joined())
            #expect(try await client.replies(200) == Array(repeating: "+OK", count: 200))
            try await client.send("TASK.TRACE STOP\r\nTASK.TRACE DUMP\r\n")
            for reply in try await client.replies(2) {
                #expect(reply.hasPrefix("-ERR the trace is "), "\(reply)")
            }
            // A small trace still goes through the same connection, and STOP then stops it.
            try await client.send("TASK.TRACE START 5\r\nSET small 1\r\nTASK.TRACE STOP\r\nTASK.TRACE DUMP\r\n")
            let small = try await client.replies(4)
            #expect(small[0...1] == ["+OK", "+OK"])
            #expect(small[2].contains("\"traceEvents\""))
            #expect(small[3] == "nil")
        }
    }

    @Test func startDumpAndStopFromAClient() async throws {
        try await withServer({
            $0.loops = 2
            $0.work = .sleep(milliseconds: 60_000)
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("TASK.TRACE DUMP\r\nTASK.TRACE START\r\n")
            #expect(try await client.replies(2) == ["nil", "+OK"])
            try await restart("a", client)
            try await client.send("TASK.TRACE DUMP\r\n")
            let dump = try await client.replies(1)[0]
            #expect(dump.hasPrefix("\"{") && dump.hasSuffix("}\n\""))
            let recorded = try runs(inTrace: String(dump.dropFirst().dropLast()))
            #expect(recorded["a"] == ["g1 cancelled(identityChanged)", "g2 running"])
            try await client.send("TASK.TRACE STOP\r\nTASK.TRACE STOP\r\nTASK.TRACE DUMP\r\n")
            let stopped = try await client.replies(3)
            #expect(stopped[0].contains("\"traceEvents\""))
            // START's default: 32,768 events in all, split over the two loops.
            #expect(stopped[0].contains("\"capacity\":32768,"))
            #expect(stopped[1...2] == ["nil", "nil"])
            try await client.send(
                "TASK.TRACE START 0\r\nTASK.TRACE START 67108865\r\nTASK.TRACE START 1 2\r\nTASK.TRACE PAUSE\r\nTASK.TRACE\r\n"
            )
            #expect(
                try await client.replies(5) == [
                    "-ERR capacity must be an integer from 1 to 67108864",
                    "-ERR capacity must be an integer from 1 to 67108864",
                    "-ERR wrong number of arguments for 'task.trace|start' command",
                    "-ERR unknown subcommand 'PAUSE'. Try START, DUMP or STOP.",
                    "-ERR wrong number of arguments for 'task.trace' command",
                ])
        }
    }

    @Test func traceFileIsWrittenAtShutdown() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("taskid-trace-\(getpid()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await withServer({
            $0.loops = 2
            $0.work = .sleep(milliseconds: 60_000)
            $0.tracePath = path
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await restart("k", client)
        }
        // Written after the registry's shutdown, which cancelled the second run.
        let recorded = try runs(inTrace: try String(contentsOfFile: path, encoding: .utf8))
        #expect(recorded["k"] == ["g1 cancelled(identityChanged)", "g2 cancelled(registryShutDown)"])
    }
}
