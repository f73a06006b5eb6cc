/// `--client-output-buffer-limit`, Redis's limits on the replies queued for a client that does
/// not read them: past `hardBytes` it is disconnected at once; above `softBytes` for
/// `softSeconds` without a break, it is disconnected too. 0 turns a limit off. A value type;
/// any thread.
package struct OutputBufferLimit: Sendable, Equatable, CustomStringConvertible {
    package var hardBytes: Int
    package var softBytes: Int
    package var softSeconds: Int

    /// The default: 1 GiB hard, 64 MiB for 60 s soft. A client reading its replies gets any
    /// reply the server can store (a 512 MiB value, a pipeline's worth of replies), while one
    /// that stops reading holds at most 1 GiB, and more than 64 MiB for a minute at most.
    /// (Redis's own default for normal clients is no limit at all: `0 0 0`.)
    package static let standard = OutputBufferLimit(hardBytes: 1 << 30, softBytes: 64 << 20, softSeconds: 60)

    /// The three limits as given.
    package init(hardBytes: Int, softBytes: Int, softSeconds: Int) {
        self.hardBytes = hardBytes
        self.softBytes = softBytes
        self.softSeconds = softSeconds
    }

    /// Parses `HARD SOFT SECONDS`, or Redis's own `normal HARD SOFT SECONDS`; sizes take
    /// Redis's units (`1gb`). Nil for anything else.
    package init?(argument: String) {
        var words = argument.split(whereSeparator: { $0 == " " || $0 == "\t" })
        if words.count == 4, words[0].lowercased() == "normal" { words.removeFirst() }
        guard words.count == 3, let hard = ByteCount(parsing: words[0]), let soft = ByteCount(parsing: words[1]),
            let seconds = Int(words[2]), seconds >= 0
        else { return nil }
        self.init(hardBytes: hard.bytes, softBytes: soft.bytes, softSeconds: seconds)
    }

    package var description: String {
        "\(ByteCount(hardBytes)) \(ByteCount(softBytes)) \(softSeconds)"
    }

    /// Whether a client with `queuedBytes` of replies unsent must be disconnected now, given
    /// since when (`overSoftSince`, monotonic nanoseconds) it has been above the soft limit;
    /// `overSoftSince` is updated: set when it goes above, cleared when it comes back under.
    /// Returns the limit passed, or nil.
    /// `now` is read only above the soft limit.
    package func exceeded(queuedBytes: Int, now: @autoclosure () -> UInt64, overSoftSince: inout UInt64?) -> Exceeded? {
        if hardBytes > 0 && queuedBytes > hardBytes { return .hard }
        guard softBytes > 0 && queuedBytes > softBytes else {
            overSoftSince = nil
            return nil
        }
        guard let since = overSoftSince else {
            overSoftSince = now()
            return softSeconds == 0 ? .soft : nil
        }
        // Seconds past what nanoseconds can count never elapse.
        let (window, overflow) = UInt64(softSeconds).multipliedReportingOverflow(by: 1_000_000_000)
        return !overflow && now() &- since >= window ? .soft : nil
    }

    /// Which limit a client passed.
    package enum Exceeded: Equatable {
        case hard, soft
    }
}
