// The request side of RESP2, the Redis protocol: arrays of bulk strings (what redis-cli and
// redis-benchmark send) and inline commands (what a person types into telnet). Self-contained
// (no other module) so that the fuzz target compiles it on its own.

/// Limits that keep one client from making the server allocate without bound.
struct RESPLimits: Sendable {
    /// The most bytes one request (all its arguments and framing) may take.
    var maxRequestBytes: Int = 1 << 20
    /// The most arguments one request may have. Small on purpose: an incomplete request is
    /// parsed again from its start on each read, so this bounds that work (the registry's
    /// commands take a few arguments; Redis's limit is far larger).
    var maxArguments: Int = 1024
}

/// Why a request could not be parsed. The connection answers `-ERR Protocol error: …` and
/// closes, as Redis does, because the stream cannot be resynchronised.
struct RESPProtocolError: Error, Equatable, CustomStringConvertible {
    let message: String
    var description: String { "Protocol error: \(message)" }
}

/// An incremental parser: feed it bytes as they arrive, take complete requests out.
///
/// Requests are returned in order; a request split across reads is completed by later feeds.
/// Memory is bounded by `RESPLimits.maxRequestBytes` plus one read. Arguments are slices of the
/// parser's buffer, not copies: empty the arguments array before the next `feed`, or feeding
/// copies the whole buffer.
struct RESPParser {
    private var buffer: [UInt8] = []
    private var position = 0
    let limits: RESPLimits

    init(limits: RESPLimits = RESPLimits()) { self.limits = limits }

    /// Appends received bytes.
    mutating func feed<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        } else if position > 65_536 {
            buffer.removeFirst(position)
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
            if buffer[position] == UInt8(ascii: "*") {
                switch try nextArray(into: &arguments) {
                case .request: return true
                case .needMore: return false
                case .empty: continue  // "*0" and "*-1": skipped, as Redis does
                }
            }
            // Inline command; empty lines are skipped, as Redis does.
            guard let end = lineEnd(from: position) else {
                if pendingBytes > min(limits.maxRequestBytes, 64 * 1024) {
                    throw RESPProtocolError(message: "too big inline request")
                }
                return false
            }
            let line = buffer[position..<end]
            position = end + 2
            let words = line.split(whereSeparator: {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r")
            })
            if words.isEmpty { continue }
            guard words.count <= limits.maxArguments else { throw RESPProtocolError(message: "too many arguments") }
            arguments.append(contentsOf: words)
            return true
        }
        return false
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
        var cursor = position
        guard let headerEnd = lineEnd(from: cursor) else {
            if buffer.count - cursor > 32 { throw RESPProtocolError(message: "invalid multibulk length") }
            return .needMore
        }
        guard let count = integer(cursor + 1, headerEnd) else {
            throw RESPProtocolError(message: "invalid multibulk length")
        }
        guard count <= limits.maxArguments else { throw RESPProtocolError(message: "invalid multibulk length") }
        cursor = headerEnd + 2
        if count <= 0 {
            position = cursor
            return .empty
        }
        var requestBytes = cursor - position
        for _ in 0..<count {
            guard cursor < buffer.count else { return try needMore(&arguments) }

            guard buffer[cursor] == UInt8(ascii: "$") else {
                throw RESPProtocolError(message: "expected '$', got '\(Character(Unicode.Scalar(buffer[cursor])))'")
            }
            guard let lengthEnd = lineEnd(from: cursor) else {
                if buffer.count - cursor > 32 { throw RESPProtocolError(message: "invalid bulk length") }
                return try needMore(&arguments)
            }
            guard let length = integer(cursor + 1, lengthEnd), length >= 0 else {
                throw RESPProtocolError(message: "invalid bulk length")
            }
            requestBytes += lengthEnd + 2 - cursor + length + 2
            guard length <= limits.maxRequestBytes, requestBytes <= limits.maxRequestBytes else {
                throw RESPProtocolError(message: "request larger than \(limits.maxRequestBytes) bytes")
            }
            let dataStart = lengthEnd + 2
            guard dataStart + length + 2 <= buffer.count else { return try needMore(&arguments) }
            guard buffer[dataStart + length] == UInt8(ascii: "\r"), buffer[dataStart + length + 1] == UInt8(ascii: "\n")
            else {
                throw RESPProtocolError(message: "bulk string not terminated by CRLF")
            }
            arguments.append(buffer[dataStart..<(dataStart + length)])
            cursor = dataStart + length + 2
        }
        position = cursor
        return .request
    }

    private func needMore(_ arguments: inout [ArraySlice<UInt8>]) throws(RESPProtocolError) -> ArrayOutcome {
        arguments.removeAll(keepingCapacity: true)
        if pendingBytes > limits.maxRequestBytes {
            throw RESPProtocolError(message: "request larger than \(limits.maxRequestBytes) bytes")
        }
        return .needMore
    }
}

/// RESP2 replies, appended to an output buffer.
enum RESPReply {
    static func simple(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "+"))
        out.append(contentsOf: text.utf8)
        crlf(&out)
    }

    static func error(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "-"))
        // An error line must not contain CR or LF.
        out.append(contentsOf: text.utf8.map { $0 == 13 || $0 == 10 ? UInt8(ascii: " ") : $0 })
        crlf(&out)
    }

    static func integer(_ value: Int, into out: inout [UInt8]) {
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: String(value).utf8)
        crlf(&out)
    }

    static func bulk<Bytes: Collection>(_ bytes: Bytes, into out: inout [UInt8]) where Bytes.Element == UInt8 {
        out.append(UInt8(ascii: "$"))
        out.append(contentsOf: String(bytes.count).utf8)
        crlf(&out)
        out.append(contentsOf: bytes)
        crlf(&out)
    }

    static func null(into out: inout [UInt8]) {
        out.append(contentsOf: "$-1\r\n".utf8)
    }

    static func arrayHeader(_ count: Int, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "*"))
        out.append(contentsOf: String(count).utf8)
        crlf(&out)
    }

    private static func crlf(_ out: inout [UInt8]) {
        out.append(13)
        out.append(10)
    }
}
