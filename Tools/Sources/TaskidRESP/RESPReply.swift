/// The reply protocol a connection speaks: RESP2 until the client says `HELLO 3`. A value
/// type; any thread.
package enum RESPVersion: Int, Sendable {
    case resp2 = 2
    case resp3 = 3
}

/// Replies, appended to an output buffer. Most are the same in RESP2 and RESP3; those that
/// differ (null, map, verbatim text) take the connection's version. Any thread.
package enum RESPReply {
    package static func simple(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "+"))
        out.append(contentsOf: text.utf8)
        crlf(&out)
    }

    package static func error(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "-"))
        // An error line must not contain CR or LF.
        out.append(contentsOf: text.utf8.map { $0 == 13 || $0 == 10 ? UInt8(ascii: " ") : $0 })
        crlf(&out)
    }

    package static func integer(_ value: Int, into out: inout [UInt8]) {
        out.append(UInt8(ascii: ":"))
        out.append(contentsOf: String(value).utf8)
        crlf(&out)
    }

    package static func bulk<Bytes: Collection>(_ bytes: Bytes, into out: inout [UInt8]) where Bytes.Element == UInt8 {
        out.append(UInt8(ascii: "$"))
        out.append(contentsOf: String(bytes.count).utf8)
        crlf(&out)
        out.append(contentsOf: bytes)
        crlf(&out)
    }

    /// No value: RESP2's null bulk string, RESP3's null.
    package static func null(_ version: RESPVersion, into out: inout [UInt8]) {
        out.append(contentsOf: version == .resp3 ? "_\r\n".utf8 : "$-1\r\n".utf8)
    }

    /// A map of `count` pairs (each written as key, then value, after this header): RESP3's
    /// map, or in RESP2 an array of twice as many elements, as Redis does.
    package static func mapHeader(_ count: Int, _ version: RESPVersion, into out: inout [UInt8]) {
        out.append(version == .resp3 ? UInt8(ascii: "%") : UInt8(ascii: "*"))
        out.append(contentsOf: String(version == .resp3 ? count : count * 2).utf8)
        crlf(&out)
    }

    /// Text for a person (INFO): RESP3's verbatim string of format `txt`, RESP2's bulk string.
    package static func verbatimText(_ text: String, _ version: RESPVersion, into out: inout [UInt8]) {
        guard version == .resp3 else { return bulk(text.utf8, into: &out) }
        out.append(UInt8(ascii: "="))
        out.append(contentsOf: String(text.utf8.count + 4).utf8)
        crlf(&out)
        out.append(contentsOf: "txt:".utf8)
        out.append(contentsOf: text.utf8)
        crlf(&out)
    }

    /// A set of `count` elements: RESP3's set, or in RESP2 an array, as Redis does.
    package static func setHeader(_ count: Int, _ version: RESPVersion, into out: inout [UInt8]) {
        out.append(version == .resp3 ? UInt8(ascii: "~") : UInt8(ascii: "*"))
        out.append(contentsOf: String(count).utf8)
        crlf(&out)
    }

    package static func arrayHeader(_ count: Int, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "*"))
        out.append(contentsOf: String(count).utf8)
        crlf(&out)
    }

    private static func crlf(_ out: inout [UInt8]) {
        out.append(13)
        out.append(10)
    }
}
