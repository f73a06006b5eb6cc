import Testing

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
}
