import Testing
import UVLoop

@testable import taskid

/// `--max-running` and `TASK.QUEUE`: SETs past the cap wait, and a newer SET replaces a
/// waiting one without running it.
@Suite("taskid serve: a cap on runs at once, and its queue")
struct RunLimitTests {
    /// Polls TASK.PHASE until it answers `phase` (no fixed wait).
    func waitForPhase(_ phase: String, of key: String, _ client: TestClient) async throws {
        while true {
            try await client.send("TASK.PHASE \(key)\r\n")
            if try await client.replies(1)[0] == phase { return }
            await Task.yield()
        }
    }

    @Test func setsPastTheCapWaitAndTheQueueShowsThem() async throws {
        try await withServer({
            $0.work = .taskSleep(milliseconds: 600_000)
            $0.maxRunning = 1
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET a 1\r\nSET b 1\r\nSET c 1\r\n")
            #expect(try await client.replies(3) == ["+OK", "+OK", "+OK"])
            try await waitForPhase("+running", of: "a", client)
            try await waitForPhase("+waiting", of: "c", client)
            try await client.send("TASK.PHASE b\r\nTASK.QUEUE\r\nINFO\r\n")
            let replies = try await client.replies(3)
            #expect(replies[0] == "+waiting")
            #expect(replies[1].hasPrefix(#"["queued", :2, "running", :1, "max_running", :1, "oldest_wait_ms", :"#))
            #expect(replies[2].contains("max_running:1") && replies[2].contains("queue_length:2"))
            // A newer id for b replaces the waiting one and joins behind c; removing a frees
            // the place, and c takes it.
            try await client.send("SET b 2\r\nDEL a\r\n")
            #expect(try await client.replies(2) == ["+OK", ":1"])
            try await waitForPhase("+running", of: "c", client)
            try await client.send("TASK.PHASE b\r\nTASK.QUEUE\r\nINFO\r\n")
            let after = try await client.replies(3)
            #expect(after[0] == "+waiting")
            #expect(after[1].hasPrefix(#"["queued", :1, "running", :1, "#))
            #expect(after[2].contains("coalesced:1") && after[2].contains("started:2"), "b's id 1 never started")
        }
    }

    @Test func withoutACapTheQueueIsEmpty() async throws {
        try await withServer({ $0.work = .taskSleep(milliseconds: 600_000) }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET a 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            try await waitForPhase("+running", of: "a", client)
            try await client.send("TASK.QUEUE\r\n")
            #expect(
                try await client.replies(1) == [
                    #"["queued", :0, "running", :1, "max_running", :0, "oldest_wait_ms", :0, "max_queued", :-1, "shed", :0]"#
                ])
        }
    }

    /// `--max-queued 1`: each SET that finds the queue full sheds the one that has waited
    /// longest; the shed keys answer `cancelled(shed)`, and TASK.QUEUE and INFO count them.
    @Test func aFullQueueShedsItsOldest() async throws {
        try await withServer({
            $0.work = .taskSleep(milliseconds: 600_000)
            $0.maxRunning = 1
            $0.maxQueued = 1
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET a 1\r\nSET b 1\r\n")
            #expect(try await client.replies(2) == ["+OK", "+OK"])
            try await waitForPhase("+waiting", of: "b", client)
            try await client.send("SET c 1\r\nSET d 1\r\n")
            #expect(try await client.replies(2) == ["+OK", "+OK"])
            try await waitForPhase("+waiting", of: "d", client)
            try await client.send("TASK.PHASE b\r\nTASK.PHASE c\r\nTASK.QUEUE\r\nINFO\r\n")
            let replies = try await client.replies(4)
            #expect(replies[0] == "+cancelled(shed)" && replies[1] == "+cancelled(shed)")
            #expect(replies[2].hasPrefix(#"["queued", :1, "running", :1, "max_running", :1, "oldest_wait_ms", :"#))
            #expect(replies[2].hasSuffix(#""max_queued", :1, "shed", :2]"#))
            #expect(replies[3].contains("max_queued:1") && replies[3].contains("\r\nshed:2"))
        }
    }
}
