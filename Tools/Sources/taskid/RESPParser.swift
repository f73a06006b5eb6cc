// The request side of RESP, the Redis protocol (the same in RESP2 and RESP3): arrays of bulk
// strings (what clients and redis-benchmark send) and inline commands (what a person types into
// telnet or nc). Self-contained, with RESPInlineCommand.swift, so that the fuzz target compiles
// them on their own.

/// Limits that keep one client from making the server allocate without bound. A value type;
/// any thread.
struct RESPLimits: Sendable, Equatable {
    /// The default of `maxRequestBytes`: 512 MiB, Redis's largest bulk string
    /// (`proto-max-bulk-len`). Memory is taken as bytes arrive, never ahead of them.
    static let defaultMaxRequestBytes = 512 << 20
    /// The default of `maxArguments`: Redis's own limit on a request's arguments (`INT_MAX`).
    /// In practice `maxRequestBytes` bounds a request first (each argument takes 6 bytes at least).
    static let defaultMaxArguments = Int(Int32.max)
    /// The longest inline command (a line without `*`): 64 KiB, as Redis.
    static let maxInlineBytes = 64 * 1024

    /// The most bytes one request (all its arguments and framing) may take.
    var maxRequestBytes: Int = Self.defaultMaxRequestBytes
    /// The most arguments one request may have, the command's name included.
    var maxArguments: Int = Self.defaultMaxArguments
}

/// Why a request could not be parsed. The connection answers `-ERR Protocol error: …` and
/// closes, as Redis does, because the stream cannot be resynchronised.
struct RESPProtocolError: Error, Equatable, CustomStringConvertible {
    let message: String
    var description: String { "Protocol error: \(message)" }
}

/// An incremental parser: feed it bytes as they arrive, take complete requests out. A value
/// type, used by one connection's task (on the front loop in the server).
///
/// Requests are returned in order; a request split across reads is completed by later feeds,
/// resuming where the last feed stopped (a request of a million arguments arriving in 64 KiB
/// reads is parsed once, not once per read). Memory is bounded by `RESPLimits.maxRequestBytes`
/// plus one read, plus 32 bytes per argument of the request being parsed (48 while it is
/// incomplete). Arguments are slices of the parser's buffer, not copies: empty the arguments
/// array before the next `feed`, or feeding copies the whole buffer.
struct RESPParser {
    private var buffer: [UInt8] = []
    /// Where the request being parsed starts.
    private var position = 0
    /// How many bytes after `position` an incomplete inline line has been searched for LF
    /// already (so a long line arriving byte by byte is scanned once).
    private var inlineScanned = 0
    /// An array request cut short by the end of the buffer: what was parsed of it, kept as
    /// offsets from `position` (which compaction leaves valid) so the next call resumes there.
    private var partial: PartialArray?
    let limits: RESPLimits

    private struct PartialArray {
        var declaredCount: Int
        /// Each complete argument's bytes, as offsets from the request's start.
        var arguments: [Range<Int>] = []
        /// Where the next argument starts, from the request's start.
        var cursor: Int
    }

    init(limits: RESPLimits = RESPLimits()) { self.limits = limits }

    /// Appends received bytes.
    mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        } else if position > 65_536 {
            buffer.removeFirst(position)  // offsets in `partial` are from `position`: unchanged
            position = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received and not yet consumed by a complete request.
    var pendingBytes: Int { buffer.count - position }

    /// The next complete request's arguments (as copies), `nil` if more bytes are needed.
    /// - Throws: `RESPProtocolError` for malformed or oversized input.
    mutating func next() throws(RESPProtocolError) -> [[UInt8]]? {
        var arguments: [ArraySlice<UInt8>] = []
        guard try next(into: &arguments) else { return nil }
        return arguments.map { Array($0) }
    }

    /// Puts the next complete request's arguments into `arguments` (replacing what was there)
    /// and returns true; returns false if more bytes are needed.
    /// - Throws: `RESPProtocolError` for malformed or oversized input.
    mutating func next(into arguments: inout [ArraySlice<UInt8>]) throws(RESPProtocolError) -> Bool {
        arguments.removeAll(keepingCapacity: true)
        while position < buffer.count {
            if partial != nil || buffer[position] == UInt8(ascii: "*") {
                switch try nextArray(into: &arguments) {
                case .request: return true
                case .needMore: return false
                case .empty: continue  // "*0" and "*-1": skipped, as Redis does
                }
            }
            // An inline command ends at LF, with or without CR before it (as Redis).
            guard let newline = buffer[(position + inlineScanned)...].firstIndex(of: UInt8(ascii: "\n")) else {
                inlineScanned = pendingBytes
                if pendingBytes > RESPLimits.maxInlineBytes {
                    throw RESPProtocolError(message: "too big inline request")
                }
                return false
            }
            guard newline - position <= RESPLimits.maxInlineBytes else {
                throw RESPProtocolError(message: "too big inline request")
            }
            let line = buffer[position..<newline]
            position = newline + 1
            inlineScanned = 0
            try RESPInlineCommand.split(line, into: &arguments)
            if arguments.isEmpty { continue }  // empty lines are skipped, as Redis does
            guard arguments.count <= limits.maxArguments else { throw tooManyArguments(arguments.count) }
            return true
        }
        return false
    }

    private func tooManyArguments(_ count: Int) -> RESPProtocolError {
        RESPProtocolError(message: "too many arguments (\(count); this server takes at most \(limits.maxArguments))")
    }

    /// Index of the `\r` of the next `\r\n` at or after `start`, if complete.
    private func lineEnd(from start: Int) -> Int? {
        var index = start
        while index + 1 < buffer.count {
            if buffer[index] == UInt8(ascii: "\r") && buffer[index + 1] == UInt8(ascii: "\n") { return index }
            index += 1
        }
        return nil
    }

    /// Parses a decimal integer in `buffer[start..<end]` (optional leading '-').
    private func integer(_ start: Int, _ end: Int) -> Int? {
        guard start < end, end - start <= 18 else { return nil }
        var index = start
        var negative = false
        if buffer[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
            guard index < end else { return nil }
        }
        var value = 0
        while index < end {
            let digit = Int(buffer[index]) - 48
            guard (0...9).contains(digit) else { return nil }
            value = value * 10 + digit
            index += 1
        }
        return negative ? -value : value
    }

    private enum ArrayOutcome { case request, needMore, empty }

    private mutating func nextArray(into arguments: inout [ArraySlice<UInt8>]) throws(RESPProtocolError) -> ArrayOutcome
    {
        // A request that arrived whole is parsed straight into `arguments`. One cut short keeps
        // its arguments as offsets in `partial`; later calls append to those and make the slices
        // once the request is complete, so each byte is parsed once however many reads it took.
        var resumed = partial.take()
        let count: Int
        var cursor: Int
        if let resumed {
            count = resumed.declaredCount
            cursor = position + resumed.cursor
        } else {
            guard let headerEnd = lineEnd(from: position) else {
                if buffer.count - position > 32 { throw RESPProtocolError(message: "invalid multibulk length") }
                return .needMore
            }
            guard let declared = integer(position + 1, headerEnd) else {
                throw RESPProtocolError(message: "invalid multibulk length")
            }
            guard declared <= limits.maxArguments else { throw tooManyArguments(declared) }
            cursor = headerEnd + 2
            if declared <= 0 {
                position = cursor
                return .empty
            }
            count = declared
        }
        while (resumed?.arguments.count ?? arguments.count) < count {
            guard cursor < buffer.count else { return try needMore(&arguments, &resumed, count: count, cursor: cursor) }
            guard buffer[cursor] == UInt8(ascii: "$") else {
                throw RESPProtocolError(message: "expected '$', got '\(Character(Unicode.Scalar(buffer[cursor])))'")
            }
            guard let lengthEnd = lineEnd(from: cursor) else {
                if buffer.count - cursor > 32 { throw RESPProtocolError(message: "invalid bulk length") }
                return try needMore(&arguments, &resumed, count: count, cursor: cursor)
            }
            guard let length = integer(cursor + 1, lengthEnd), length >= 0 else {
                throw RESPProtocolError(message: "invalid bulk length")
            }
            let dataStart = lengthEnd + 2
            guard length <= limits.maxRequestBytes, dataStart + length + 2 - position <= limits.maxRequestBytes else {
                throw RESPProtocolError(message: "request larger than \(limits.maxRequestBytes) bytes")
            }
            guard dataStart + length + 2 <= buffer.count else {
                return try needMore(&arguments, &resumed, count: count, cursor: cursor)
            }
            guard buffer[dataStart + length] == UInt8(ascii: "\r"), buffer[dataStart + length + 1] == UInt8(ascii: "\n")
            else {
                throw RESPProtocolError(message: "bulk string not terminated by CRLF")
            }
            if resumed != nil {
                resumed!.arguments.append((dataStart - position)..<(dataStart + length - position))
            } else {
                arguments.append(buffer[dataStart..<(dataStart + length)])
            }
            cursor = dataStart + length + 2
        }
        if let resumed {
            arguments.reserveCapacity(count)
            for range in resumed.arguments {
                arguments.append(buffer[(position + range.lowerBound)..<(position + range.upperBound)])
            }
        }
        position = cursor
        return .request
    }

    /// Keeps what was parsed of an incomplete array request, as offsets, for the next call.
    private mutating func needMore(
        _ arguments: inout [ArraySlice<UInt8>], _ resumed: inout PartialArray?, count: Int, cursor: Int
    ) throws(RESPProtocolError) -> ArrayOutcome {
        if pendingBytes > limits.maxRequestBytes {
            throw RESPProtocolError(message: "request larger than \(limits.maxRequestBytes) bytes")
        }
        let start = position
        var kept = resumed ?? PartialArray(declaredCount: count, cursor: 0)
        if resumed == nil {
            kept.arguments = arguments.map { ($0.startIndex - start)..<($0.endIndex - start) }
            arguments.removeAll(keepingCapacity: true)
        }
        kept.cursor = cursor - start
        partial = kept
        return .needMore
    }
}

extension Optional {
    /// Returns the value and leaves `nil` behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
