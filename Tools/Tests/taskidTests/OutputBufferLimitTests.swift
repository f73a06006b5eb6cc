import Testing

@testable import TaskidRESP
@testable import TaskidServer
@testable import taskid

/// `--client-output-buffer-limit`'s rule, on its own: the hard limit at once, the soft limit
/// only after its seconds above it without a break, and 0 for a limit that is off.
@Suite("The output buffer's limits")
struct OutputBufferLimitTests {
    let limit = OutputBufferLimit(hardBytes: 1000, softBytes: 100, softSeconds: 2)
    let second: UInt64 = 1_000_000_000

    @Test func theHardLimitDisconnectsAtOnce() {
        var since: UInt64?
        #expect(limit.exceeded(queuedBytes: 1000, now: 0, overSoftSince: &since) == nil, "at the limit is within it")
        #expect(limit.exceeded(queuedBytes: 1001, now: 0, overSoftSince: &since) == .hard)
    }

    @Test func theSoftLimitDisconnectsAfterItsSecondsAboveIt() {
        var since: UInt64?
        #expect(limit.exceeded(queuedBytes: 101, now: 5 * second, overSoftSince: &since) == nil)
        #expect(since == 5 * second)
        #expect(limit.exceeded(queuedBytes: 500, now: 7 * second - 1, overSoftSince: &since) == nil)
        #expect(limit.exceeded(queuedBytes: 101, now: 7 * second, overSoftSince: &since) == .soft)
    }

    @Test func comingBackUnderTheSoftLimitStartsItsSecondsAgain() {
        var since: UInt64?
        _ = limit.exceeded(queuedBytes: 500, now: 0, overSoftSince: &since)
        #expect(limit.exceeded(queuedBytes: 100, now: 1 * second, overSoftSince: &since) == nil)
        #expect(since == nil)
        #expect(limit.exceeded(queuedBytes: 500, now: 2 * second, overSoftSince: &since) == nil)
        #expect(limit.exceeded(queuedBytes: 500, now: 3 * second, overSoftSince: &since) == nil, "1 s of 2")
        #expect(limit.exceeded(queuedBytes: 500, now: 4 * second, overSoftSince: &since) == .soft)
    }

    /// Seconds past what nanoseconds can count never elapse (found in review: they trapped).
    @Test func aSoftLimitOfCountlessSecondsNeverFires() {
        let forever = OutputBufferLimit(hardBytes: 0, softBytes: 10, softSeconds: 99_999_999_999)
        var since: UInt64? = 0
        #expect(forever.exceeded(queuedBytes: 11, now: .max, overSoftSince: &since) == nil)
    }

    @Test func zeroTurnsALimitOff() {
        var since: UInt64?
        let off = OutputBufferLimit(hardBytes: 0, softBytes: 0, softSeconds: 0)
        #expect(off.exceeded(queuedBytes: .max, now: 0, overSoftSince: &since) == nil)
        let softAtOnce = OutputBufferLimit(hardBytes: 0, softBytes: 10, softSeconds: 0)
        #expect(softAtOnce.exceeded(queuedBytes: 11, now: 0, overSoftSince: &since) == .soft)
    }

    /// The default lets a client that reads take the largest value the server stores, and
    /// bounds one that does not.
    @Test func theDefaultHoldsTheLargestValue() {
        let standard = OutputBufferLimit.standard
        #expect(standard.hardBytes > RESPLimits.defaultMaxBulkBytes + 64)
        #expect(standard.softBytes > 0 && standard.softSeconds > 0)
    }

    /// EXEC makes its whole reply before sending any of it: past the hard limit the client is
    /// dropped while it is made, not after the server has built it all (MULTI, 20 GETs of a
    /// 16 KiB value against a 64 KiB limit).
    @Test func aTransactionWhoseRepliesPassTheHardLimitIsDroppedWhileTheyAreMade() async throws {
        try await withServer({
            $0.outputBufferLimit = OutputBufferLimit(hardBytes: 64 << 10, softBytes: 0, softSeconds: 0)
        }) {
            server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET k \(String(repeating: "v", count: 16 << 10))\r\n")
            #expect(try await client.replies(1) == ["+OK"])
            while try await {
                try await client.send("GET k\r\n"); return try await client.replies(1)[0]
            }() == "nil" {
                await Task.yield()
            }
            try await client.send("MULTI\r\n" + String(repeating: "GET k\r\n", count: 20) + "EXEC\r\n")
            // The replies before EXEC's arrive, then the end of the stream: none of EXEC's.
            #expect(try await client.replies(21) == ["+OK"] + Array(repeating: "+QUEUED", count: 20))
            #expect(try await client.replies(1) == ["<closed>"])
        }
    }
}

/// How `--max-clients` is fitted to the open-files limit, as Redis fits `maxclients`.
@Suite("The descriptor budget")
struct DescriptorBudgetTests {
    @Test func clientsThatFitLeaveTheLimitAlone() {
        #expect(
            DescriptorBudget.fitting(maxClients: 100, reserved: 60, soft: 1024, hard: 4096)
                == DescriptorBudget(softLimit: 1024, maxClients: 100))
    }

    @Test func theSoftLimitIsRaisedTowardTheHardOne() {
        #expect(
            DescriptorBudget.fitting(maxClients: 10_000, reserved: 60, soft: 1024, hard: 1_048_576)
                == DescriptorBudget(softLimit: 10_060, maxClients: 10_000))
    }

    @Test func pastTheHardLimitFewerClientsAreServed() {
        #expect(
            DescriptorBudget.fitting(maxClients: 10_000, reserved: 60, soft: 1024, hard: 1024)
                == DescriptorBudget(softLimit: 1024, maxClients: 964))
        #expect(
            DescriptorBudget.fitting(maxClients: 10_000, reserved: 60, soft: 1024, hard: 2048)
                == DescriptorBudget(softLimit: 2048, maxClients: 1988))
        #expect(DescriptorBudget.fitting(maxClients: 5, reserved: 60, soft: 50, hard: 50).maxClients == 0)
    }

    @Test func upstreamConnectionsAreReserved() {
        var configuration = ServerConfiguration()
        let plain = DescriptorBudget.reserved(for: configuration)
        configuration.work = .upstream(host: "127.0.0.1", port: 1)
        #expect(DescriptorBudget.reserved(for: configuration) == plain + configuration.upstreamMaxConnections)
    }
}
