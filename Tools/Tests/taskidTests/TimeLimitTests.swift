import Testing
import UVLoop

@testable import taskid

/// `--timeout-ms`: a run past its time limit is cancelled, and GET keeps what finished before.
@Suite("taskid serve: runs' time limit")
struct TimeLimitTests {
    @Test func aRunPastTheLimitIsCancelledAndGetKeepsTheLastFinishedID() async throws {
        try await withServer({
            $0.work = .taskSleep(milliseconds: 600_000)
            $0.timeoutMilliseconds = 30
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            #expect(try await endedPhase(of: "k", client) == "+cancelled(timedOut)")
            try await client.send("GET k\r\nINFO\r\n")
            let replies = try await client.replies(2)
            #expect(replies[0] == "nil", "no run of k finished")
            #expect(replies[1].contains("timeout_ms:30") && replies[1].contains("timed_out:1"))
        }
    }

    @Test func aLimitLongerThanTheRunLetsItFinish() async throws {
        try await withServer({
            $0.work = .taskSleep(milliseconds: 1)
            $0.timeoutMilliseconds = 600_000
        }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            #expect(try await endedPhase(of: "k", client) == "+finished")
            try await client.send("GET k\r\n")
            #expect(try await client.replies(1) == ["[\"1\", \"1\"]"])
        }
    }
}
