// The request side of RESP, the Redis protocol (the same in RESP2 and RESP3): arrays of bulk
// strings (what clients and redis-benchmark send) and inline commands (what a person types into
// telnet or nc). Self-contained, with RESPInlineCommand.swift, so that the fuzz target compiles
// them on their own.

/// Limits that keep one client from making the server allocate without bound. A value type;
/// any thread.
package struct RESPLimits: Sendable, Equatable {
    /// The default of `maxBulkBytes`: 512 MiB, Redis's `proto-max-bulk-len`.
    package static let defaultMaxBulkBytes = 512 << 20
    /// The default of `maxQueryBufferBytes`: 1 GiB, Redis's `client-query-buffer-limit`.
    package static let defaultMaxQueryBufferBytes = 1 << 30
    /// The default of `maxArguments`: Redis's own limit on a request's arguments (`INT_MAX`).
    /// In practice `maxQueryBufferBytes` bounds a request first (each argument takes 6 bytes
    /// at least).
    package static let defaultMaxArguments = Int(Int32.max)
    /// The longest inline command (a line without `*`): 64 KiB, as Redis.
    static let maxInlineBytes = 64 * 1024

    /// The longest one argument (bulk string) may be (`--proto-max-bulk-len`).
    package var maxBulkBytes: Int = Self.defaultMaxBulkBytes
    /// The most bytes a client's requests may hold in the parser's buffer, received and not
    /// yet executed (`--client-query-buffer-limit`): bounds one request, all its arguments and
    /// framing included, and memory is taken as bytes arrive, never ahead of them.
    package var maxQueryBufferBytes: Int = Self.defaultMaxQueryBufferBytes
    /// The most arguments one request may have, the command's name included.
    package var maxArguments: Int = Self.defaultMaxArguments

    /// Redis's limits.
    package init() {}

    /// Each setting as given.
    package init(
        maxBulkBytes: Int = Self.defaultMaxBulkBytes, maxQueryBufferBytes: Int = Self.defaultMaxQueryBufferBytes,
        maxArguments: Int = Self.defaultMaxArguments
    ) {
        self.maxBulkBytes = maxBulkBytes
        self.maxQueryBufferBytes = maxQueryBufferBytes
        self.maxArguments = maxArguments
    }
}

/// Why a request could not be parsed. The connection answers `-ERR Protocol error: …` and
/// closes, as Redis does, because the stream cannot be resynchronised.
package struct RESPProtocolError: Error, Equatable, CustomStringConvertible {
    let message: String
    package var description: String { "Protocol error: \(message)" }
}

/// An incremental parser: feed it bytes as they arrive, take complete requests out. A value
/// type, used by one connection's task (on the front loop in the server).
///
/// Requests are returned in order; a request split across reads is completed by later feeds,
/// resuming where the last feed stopped (a request of a million arguments arriving in 64 KiB
/// reads is parsed once, not once per read; its headers are read a second time, quickly, to make
/// its slices). Memory is bounded by `RESPLimits.maxRequestBytes` plus one read: an incomplete
/// request keeps no record per argument, only its bytes. A complete one is handed out as 32
/// bytes per argument (its slices). Arguments are slices of the parser's buffer, not copies: empty the arguments
/// array before the next `feed`, or feeding copies the whole buffer.
package struct RESPParser {
    private var buffer: [UInt8] = []
    /// Where the request being parsed starts.
    private var position = 0
    /// How many bytes after `position` an incomplete inline line has been searched for LF
    /// already (so a long line arriving byte by byte is scanned once).
    private var inlineScanned = 0
    /// An array request cut short by the end of the buffer: how far it was parsed, as an offset
    /// from `position` (which compaction leaves valid) so the next call resumes there.
    private var partial: PartialArray?
    let limits: RESPLimits

    private struct PartialArray {
        var declaredCount: Int
        /// How many of its arguments are complete and checked.
        var parsedArguments: Int
        /// Where the next argument starts, from the request's start.
        var cursor: Int
    }

    /// The client has not authenticated yet, and must: requests are held to
    /// `argumentsBeforeLogin` arguments of `bulkBytesBeforeLogin` bytes (Redis's bounds for an
    /// unauthenticated client). Set by the connection before each request it parses.
    package var isUnauthenticated = false
    /// Redis's bounds on an unauthenticated client's requests. Any thread.
    static let argumentsBeforeLogin = 10
    static let bulkBytesBeforeLogin = 16 * 1024

    package init(limits: RESPLimits = RESPLimits()) { self.limits = limits }

    /// Appends received bytes.
    package mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        } else if position > 65_536 {
            buffer.removeFirst(position)  // the offset in `partial` is from `position`: unchanged
            position = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Frees the buffer when every byte in it has been consumed and it is larger than
    /// `keptCapacity`: a connection that sent one 100 MiB request keeps no 100 MiB buffer while
    /// it idles. Call it with no slice of the last request alive (they share the buffer).
    package mutating func releaseConsumedBuffer() {
        guard position == buffer.count, buffer.capacity > Self.keptCapacity else { return }
        buffer = []
        position = 0
    }

    /// A bulk this long gets its room reserved when its header arrives. Any thread.
    static let largeBulkBytes = 1 << 20

    /// The largest buffer kept between requests: a burst of small requests reuses it. Any
    /// thread.
    static let keptCapacity = 1 << 20

    /// Bytes received and not yet consumed by a complete request.
    package var pendingBytes: Int { buffer.count - position }

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
    package mutating func next(into arguments: inout [ArraySlice<UInt8>]) throws(RESPProtocolError) -> Bool {
        arguments.removeAll(keepingCapacity: true)
        while position < buffer.count {
            if partial != nil || buffer[position] == UInt8(ascii: "*") {
                switch try nextArray(into: &arguments) {
                case .request: return true
                case .needMore: return false
                case .empty: continue  // "*0" and "*-1": skipped, as Redis does
                }
            }
            // An inline command ends at LF, with or without CR before it (as Redis). It is a
            // request too: the query buffer's limit bounds it when that is the tighter one.
            let inlineLimit = min(RESPLimits.maxInlineBytes, limits.maxQueryBufferBytes)
            guard let newline = buffer[(position + inlineScanned)...].firstIndex(of: UInt8(ascii: "\n")) else {
                inlineScanned = pendingBytes
                if pendingBytes > inlineLimit {
                    throw RESPProtocolError(message: "too big inline request")
                }
                return false
            }
            guard newline - position <= inlineLimit else {
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

    private func queryBufferFull() -> RESPProtocolError {
        RESPProtocolError(
            message: "request larger than the client query buffer limit (\(limits.maxQueryBufferBytes) bytes)")
    }

    private func tooManyArguments(_ count: Int) -> RESPProtocolError {
        RESPProtocolError(message: "too many arguments (\(count); this server takes at most \(limits.maxArguments))")
    }

    /// Index of the `\r` of the next `\r\n` at or after `start`, if complete.
    @inline(__always)
    private func lineEnd(from start: Int) -> Int? {
        var index = start
        while index + 1 < buffer.count {
            if buffer[index] == UInt8(ascii: "\r") && buffer[index + 1] == UInt8(ascii: "\n") { return index }
            index += 1
        }
        return nil
    }

    /// Parses a decimal integer in `buffer[start..<end]` as Redis's `string2ll` does: an
    /// optional '-', then digits with no leading zero (`0` alone is zero; `01`, `-0` and `+1` are
    /// refused, as Redis refuses them), 20 characters at most and within 64 bits.
    @inline(__always)
    private func integer(_ start: Int, _ end: Int) -> Int? {
        guard start < end, end - start <= 20 else { return nil }
        var index = start
        var negative = false
        if buffer[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
            guard index < end else { return nil }
        }
        if buffer[index] == UInt8(ascii: "0") {
            // Zero is written "0": no sign, nothing after it.
            return !negative && index + 1 == end ? 0 : nil
        }
        if end - index <= 18 {
            // Up to 18 digits cannot overflow: the common case, without overflow checks.
            var value = 0
            while index < end {
                let digit = Int(buffer[index]) &- 48
                guard digit >= 0 && digit <= 9 else { return nil }
                value = value &* 10 &+ digit
                index += 1
            }
            return negative ? -value : value
        }
        // 19 digits or more: accumulated as a negative number, whose range reaches Int.min.
        var value = 0
        while index < end {
            let digit = Int(buffer[index]) - 48
            guard (0...9).contains(digit) else { return nil }
            let (times10, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowedAgain) = times10.subtractingReportingOverflow(digit)
            guard !overflowed && !overflowedAgain else { return nil }
            value = next
            index += 1
        }
        if negative { return value }
        return value == Int.min ? nil : -value
    }

    private enum ArrayOutcome { case request, needMore, empty }

    private mutating func nextArray(into arguments: inout [ArraySlice<UInt8>]) throws(RESPProtocolError) -> ArrayOutcome
    {
        // A request that arrived whole is parsed straight into `arguments`. One cut short keeps
        // only its count and where to go on (`partial`), never a record per argument: what it
        // holds is its bytes. Once it is complete, one quick pass over its already checked
        // headers makes the slices.
        var count: Int
        var parsed: Int
        var cursor: Int
        if let resumed = partial.take() {
            count = resumed.declaredCount
            parsed = resumed.parsedArguments
            cursor = position + resumed.cursor
        } else {
            guard let headerEnd = lineEnd(from: position) else {
                if buffer.count - position > 32 { throw RESPProtocolError(message: "invalid multibulk length") }
                return .needMore
            }
            // Past INT_MAX the count is invalid, as in Redis, whatever this server's limit.
            guard let declared = integer(position + 1, headerEnd), declared <= Int(Int32.max) else {
                throw RESPProtocolError(message: "invalid multibulk length")
            }
            guard declared <= limits.maxArguments else { throw tooManyArguments(declared) }
            // Before login, Redis's own bounds: a client that has not authenticated cannot make
            // the server hold a large request (its count is refused before any byte is kept).
            guard !isUnauthenticated || declared <= Self.argumentsBeforeLogin else {
                throw RESPProtocolError(message: "unauthenticated multibulk length")
            }
            cursor = headerEnd + 2
            if declared <= 0 {
                position = cursor
                return .empty
            }
            count = declared
            parsed = 0
        }
        // Arguments parsed in an earlier call have no slices here: all are made at the end.
        let resuming = parsed > 0
        while parsed < count {
            guard cursor < buffer.count else { return try needMore(&arguments, count, parsed, cursor) }
            guard buffer[cursor] == UInt8(ascii: "$") else {
                throw RESPProtocolError(message: "expected '$', got '\(Character(Unicode.Scalar(buffer[cursor])))'")
            }
            guard let lengthEnd = lineEnd(from: cursor) else {
                if buffer.count - cursor > 32 { throw RESPProtocolError(message: "invalid bulk length") }
                return try needMore(&arguments, count, parsed, cursor)
            }
            guard let length = integer(cursor + 1, lengthEnd), length >= 0 else {
                throw RESPProtocolError(message: "invalid bulk length")
            }
            let dataStart = lengthEnd + 2
            // Redis's answers: a bulk past `proto-max-bulk-len` is an invalid length.
            guard length <= limits.maxBulkBytes else { throw RESPProtocolError(message: "invalid bulk length") }
            guard !isUnauthenticated || length <= Self.bulkBytesBeforeLogin else {
                throw RESPProtocolError(message: "unauthenticated bulk length")
            }
            guard dataStart + length + 2 - position <= limits.maxQueryBufferBytes else { throw queryBufferFull() }
            guard dataStart + length + 2 <= buffer.count else {
                // A large bulk still arriving: room for all of it at once, so that the buffer is
                // not copied again at each doubling while a 512 MiB value comes in (each copy
                // held the loop, and every other client, for a moment).
                if length >= Self.largeBulkBytes { buffer.reserveCapacity(dataStart + length + 2) }
                return try needMore(&arguments, count, parsed, cursor)
            }
            guard buffer[dataStart + length] == UInt8(ascii: "\r"), buffer[dataStart + length + 1] == UInt8(ascii: "\n")
            else {
                throw RESPProtocolError(message: "bulk string not terminated by CRLF")
            }
            if !resuming { arguments.append(buffer[dataStart..<(dataStart + length)]) }
            parsed += 1
            cursor = dataStart + length + 2
        }
        if resuming { sliceCheckedArguments(count, into: &arguments) }
        position = cursor
        return .request
    }

    /// Where the first argument of the request at `position` starts: after its `*N\r\n` header.
    private func firstArgumentStart() -> Int { (lineEnd(from: position) ?? position) + 2 }

    /// Makes the slices of the complete request at `position`, whose `count` arguments have all
    /// been checked already: each header is `$`, digits, CRLF.
    private func sliceCheckedArguments(_ count: Int, into arguments: inout [ArraySlice<UInt8>]) {
        arguments.removeAll(keepingCapacity: true)
        arguments.reserveCapacity(count)
        var cursor = firstArgumentStart()
        for _ in 0..<count {
            var index = cursor + 1
            var length = 0
            while buffer[index] != UInt8(ascii: "\r") {
                length = length * 10 + Int(buffer[index] - 48)
                index += 1
            }
            let dataStart = index + 2
            arguments.append(buffer[dataStart..<(dataStart + length)])
            cursor = dataStart + length + 2
        }
    }

    /// Keeps where an incomplete array request stopped, for the next call; drops the slices
    /// made of it so far (they are made again once it is complete).
    private mutating func needMore(
        _ arguments: inout [ArraySlice<UInt8>], _ count: Int, _ parsed: Int, _ cursor: Int
    ) throws(RESPProtocolError) -> ArrayOutcome {
        if pendingBytes > limits.maxQueryBufferBytes { throw queryBufferFull() }
        // A large array of slices is let go rather than kept empty: 32 bytes per argument.
        if arguments.capacity > 1024 { arguments = [] } else { arguments.removeAll(keepingCapacity: true) }
        partial = PartialArray(declaredCount: count, parsedArguments: parsed, cursor: cursor - position)
        return .needMore
    }

    /// The heap memory this parser holds, for tests: its buffer only. An incomplete request's
    /// `PartialArray` holds no heap storage; anything given one must be counted here. Used by
    /// the parser's owner, on its thread.
    package var retainedBytes: Int { buffer.capacity }
}

extension Optional {
    /// Returns the value and leaves `nil` behind.
    fileprivate mutating func take() -> Wrapped? {
        defer { self = nil }
        return self
    }
}
