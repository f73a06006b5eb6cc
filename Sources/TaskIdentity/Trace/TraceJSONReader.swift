/// Reads a trace in Trace Event JSON (the object form with `traceEvents`, or a bare array) into
/// a `TraceLedger`: the events this registry's export writes (`RegistryTrace.json()`), found by
/// their phase, name and category; every other event and field is skipped. A byte-level
/// reader, without Foundation: the library depends on nothing, and a ten-minute trace of a busy
/// server is a few hundred megabytes.
///
/// A value; used on one thread.
struct TraceJSONReader {
    private let bytes: [UInt8]
    private var index = 0
    /// Objects and arrays open around the reader: a bound, so that deep nesting is a fault
    /// of the text and not a stack overflow.
    private var depth = 0
    private static let maxDepth = 64

    private init(_ text: String) { bytes = Array(text.utf8) }

    /// One event's fields that a ledger needs.
    private struct Event {
        var phase = ""
        var name = ""
        var category = ""
        var time: UInt64 = 0
        var duration: UInt64 = 0
        var track = -1
        var generation: UInt64 = 0
        var identity = ""
        var until: UInt64 = 0
        var runPhase = ""
        var label = ""
    }

    static func ledger(from text: String) throws(TraceReplayError) -> TraceLedger {
        var reader = TraceJSONReader(text)
        var events: [Event] = []
        reader.skipSpace()
        if reader.peek == UInt8(ascii: "[") {
            try reader.readEvents(into: &events)
        } else {
            try reader.readObject { reader, key throws(TraceReplayError) in
                if key == "traceEvents" { try reader.readEvents(into: &events) } else { try reader.skipValue() }
            }
        }
        var labels: [Int: String] = [:]
        for event in events where event.phase == "M" && event.name == "thread_name" {
            labels[event.track] = event.label
        }
        var ledger = TraceLedger()
        for event in events {
            guard let track = labels[event.track] else { continue }
            switch (event.phase, event.category) {
            case ("i", _) where event.name.hasPrefix("declared g"):
                ledger.add(event.time, track, .declared(generation: event.generation, identity: event.identity))
            case ("i", _) where event.name == "removed":
                ledger.add(event.time, track, .removed)
            case ("i", _) where event.name == "stale commit dropped":
                ledger.add(event.time, track, .commitDropped(generation: event.generation))
            case ("b", "window"):
                switch event.name {
                case "debounce":
                    ledger.add(
                        event.time, track, .windowOpened(.debounce, generation: event.generation, until: event.until))
                case "throttle":
                    ledger.add(
                        event.time, track, .windowOpened(.throttle, generation: event.generation, until: event.until))
                case "queue": ledger.add(event.time, track, .queued)
                default: break
                }
            case ("e", "window") where event.name == "debounce" || event.name == "throttle":
                ledger.add(event.time, track, .windowClosed)
            case ("X", "run"):
                ledger.add(event.time, track, .runStarted(generation: event.generation))
                // A span still open when the trace was taken says `running`: it never closed.
                if event.runPhase != "running" {
                    ledger.add(
                        event.time &+ event.duration, track,
                        .runClosed(generation: event.generation, finished: event.runPhase == "finished"))
                }
            default: break
            }
        }
        return ledger
    }

    // MARK: - Events

    private mutating func readEvents(into events: inout [Event]) throws(TraceReplayError) {
        try readList(open: "[", close: "]") { reader throws(TraceReplayError) in events.append(try reader.readEvent()) }
    }

    private mutating func readEvent() throws(TraceReplayError) -> Event {
        var event = Event()
        try readObject { reader, key throws(TraceReplayError) in
            switch key {
            case "ph": event.phase = try reader.readString()
            case "name": event.name = try reader.readString()
            case "cat": event.category = try reader.readString()
            case "ts": event.time = try reader.readMicroseconds()
            case "dur": event.duration = try reader.readMicroseconds()
            case "tid": event.track = Int(clamping: try reader.readMicroseconds() / 1_000)
            case "args":
                try reader.readObject { reader, key throws(TraceReplayError) in
                    switch key {
                    case "generation": event.generation = try reader.readMicroseconds() / 1_000
                    case "identity": event.identity = try reader.readString()
                    case "until_us": event.until = try reader.readMicroseconds()
                    case "phase": event.runPhase = try reader.readString()
                    case "name": event.label = try reader.readString()
                    default: try reader.skipValue()
                    }
                }
            default: try reader.skipValue()
            }
        }
        return event
    }

    // MARK: - JSON

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private func fault(_ message: String) -> TraceReplayError { TraceReplayError(message: message, offset: index) }

    /// One more object or array open; past `maxDepth` the text is refused.
    private mutating func enter() throws(TraceReplayError) {
        depth += 1
        guard depth <= Self.maxDepth else { throw fault("nesting deeper than \(Self.maxDepth)") }
    }

    private mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
    }

    private mutating func expect(_ character: Unicode.Scalar) throws(TraceReplayError) {
        skipSpace()
        guard peek == UInt8(ascii: character) else { throw fault("expected '\(character)'") }
        index += 1
    }

    private mutating func readObject(
        _ field: (inout TraceJSONReader, String) throws(TraceReplayError) -> Void
    ) throws(TraceReplayError) {
        try readList(open: "{", close: "}") { reader throws(TraceReplayError) in
            let key = try reader.readString()
            try reader.expect(":")
            reader.skipSpace()
            try field(&reader, key)
        }
    }

    /// A comma-separated list between `open` and `close` (an object's fields, an array's
    /// elements), each read by `item`.
    private mutating func readList(
        open: Unicode.Scalar, close: Unicode.Scalar, _ item: (inout TraceJSONReader) throws(TraceReplayError) -> Void
    ) throws(TraceReplayError) {
        try expect(open)
        try enter()
        defer { depth -= 1 }
        var first = true
        while true {
            skipSpace()
            if peek == UInt8(ascii: close) {
                index += 1
                return
            }
            if !first { try expect(",") }
            first = false
            try item(&self)
        }
    }

    private mutating func readString() throws(TraceReplayError) -> String {
        skipSpace()
        guard peek == UInt8(ascii: "\"") else { throw fault("expected a string") }
        index += 1
        var runStart = index
        var text = ""
        while true {
            guard let byte = peek else { throw fault("unterminated string") }
            if byte == UInt8(ascii: "\"") {
                text += String(decoding: bytes[runStart..<index], as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") {
                text += String(decoding: bytes[runStart..<index], as: UTF8.self)
                index += 1
                guard let escaped = peek else { throw fault("unterminated escape") }
                index += 1
                switch escaped {
                case UInt8(ascii: "n"): text += "\n"
                case UInt8(ascii: "t"): text += "\t"
                case UInt8(ascii: "r"): text += "\r"
                case UInt8(ascii: "b"): text += "\u{8}"
                case UInt8(ascii: "f"): text += "\u{C}"
                case UInt8(ascii: "u"):
                    let unit = try readHex4()
                    if (0xD800..<0xDC00).contains(unit), peek == UInt8(ascii: "\\") {
                        index += 1
                        guard peek == UInt8(ascii: "u") else { throw fault("a lone surrogate") }
                        index += 1
                        let low = try readHex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw fault("a bad surrogate pair") }
                        let value = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        guard let scalar = Unicode.Scalar(value) else { throw fault("a bad surrogate pair") }
                        text.unicodeScalars.append(scalar)
                    } else {
                        text.unicodeScalars.append(Unicode.Scalar(unit) ?? "\u{FFFD}")
                    }
                default: text += String(decoding: [escaped], as: UTF8.self)
                }
                runStart = index
                continue
            }
            index += 1
        }
    }

    private mutating func readHex4() throws(TraceReplayError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek, let digit = hexValue(byte) else { throw fault("a bad \\u escape") }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// A non-negative number of microseconds (`123.456`), as nanoseconds, exactly to the
    /// nanosecond; digits past the third decimal are dropped.
    private mutating func readMicroseconds() throws(TraceReplayError) -> UInt64 {
        skipSpace()
        var whole: UInt64 = 0
        var digits = 0
        while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
            let (scaled, overflow) = whole.multipliedReportingOverflow(by: 10)
            let (sum, carry) = scaled.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflow && !carry else { throw fault("a number out of range") }
            whole = sum
            digits += 1
            index += 1
        }
        guard digits > 0 else { throw fault("expected a non-negative number") }
        var fraction: UInt64 = 0
        var places = 0
        if peek == UInt8(ascii: ".") {
            index += 1
            while let byte = peek, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                if places < 3 {
                    fraction = fraction * 10 + UInt64(byte - UInt8(ascii: "0"))
                    places += 1
                }
                index += 1
            }
        }
        if let byte = peek, byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            throw fault("an exponent in a time")
        }
        while places < 3 {
            fraction *= 10
            places += 1
        }
        let (nanoseconds, overflow) = whole.multipliedReportingOverflow(by: 1_000)
        let (total, carry) = nanoseconds.addingReportingOverflow(fraction)
        guard !overflow && !carry else { throw fault("a number out of range") }
        return total
    }

    private mutating func skipValue() throws(TraceReplayError) {
        skipSpace()
        guard let byte = peek else { throw fault("expected a value") }
        switch byte {
        case UInt8(ascii: "\""): _ = try readString()
        case UInt8(ascii: "{"): try readObject { reader, _ throws(TraceReplayError) in try reader.skipValue() }
        case UInt8(ascii: "["):
            try readList(open: "[", close: "]") { reader throws(TraceReplayError) in try reader.skipValue() }
        default:
            // A number, true, false or null: the characters up to the next delimiter.
            let start = index
            while let next = peek, next != UInt8(ascii: ","), next != UInt8(ascii: "}"), next != UInt8(ascii: "]"),
                next != 0x20, next != 0x0A, next != 0x0D, next != 0x09
            {
                index += 1
            }
            guard index > start else { throw fault("expected a value") }
        }
    }
}
