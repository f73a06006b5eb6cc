/// Splits an inline command (one line typed into telnet or nc) into its arguments, with Redis's
/// quoting rules:
///
/// - a word ends at a space, tab, CR or LF; vertical tabs and form feeds are skipped between
///   words only;
/// - in double quotes, `\n`, `\r`, `\t`, `\b`, `\a` and `\xHH` (two hex digits) are escapes and a
///   backslash before any other character stands for that character;
/// - in single quotes, only `\'` is an escape;
/// - a closing quote must be followed by a separator or the end of the line, and an unclosed
///   quote is an error (`unbalanced quotes in request`), which closes the connection as in Redis.
///
/// One rule is this server's own: a NUL byte ends the line's words (what follows it up to the LF
/// is not read). Redis 7.0 does not do that: it looks for the LF with a C string search, which
/// stops at the NUL, so it waits for more bytes and the connection stalls until the inline
/// length limit. Answering the words before the NUL was chosen over stalling.
///
/// Self-contained, for the fuzz target. Any thread.
package enum RESPInlineCommand {
    /// Appends `line`'s arguments to `arguments`: slices of `line` for plain words (no copy),
    /// new arrays for quoted ones.
    /// - Throws: `RESPProtocolError("unbalanced quotes in request")`.
    static func split(_ line: ArraySlice<UInt8>, into arguments: inout [ArraySlice<UInt8>]) throws(RESPProtocolError) {
        // This server's rule (Redis stalls on such a line instead): what follows a NUL is not read.
        let line = line.firstIndex(of: 0).map { line[..<$0] } ?? line
        var index = line.startIndex
        let end = line.endIndex
        while true {
            while index < end && isSeparator(line[index]) { index += 1 }
            if index == end { return }
            // A word without quotes (the common case) is a slice of the line.
            let wordStart = index
            while index < end && !endsWord(line[index]) && !isQuote(line[index]) { index += 1 }
            if index == end || endsWord(line[index]) {
                arguments.append(line[wordStart..<index])
                continue
            }
            var word = Array(line[wordStart..<index])
            try quotedWord(line, &index, into: &word)
            arguments.append(word[...])
        }
    }

    /// Reads from a quote at `index` to the end of the word, appending its bytes to `word`;
    /// leaves `index` after the word. A quote may open after plain bytes (`a"b c"` is `ab c`);
    /// the closing quote must end the word (`"a"b` is unbalanced).
    private static func quotedWord(
        _ line: ArraySlice<UInt8>, _ index: inout Int, into word: inout [UInt8]
    ) throws(RESPProtocolError) {
        let end = line.endIndex
        let unbalanced = RESPProtocolError(message: "unbalanced quotes in request")
        while index < end && !endsWord(line[index]) {
            let byte = line[index]
            guard isQuote(byte) else {
                word.append(byte)
                index += 1
                continue
            }
            index += 1
            // Inside the quotes, until the closing one.
            while true {
                guard index < end else { throw unbalanced }
                let inner = line[index]
                if inner == byte {
                    index += 1
                    // As Redis: the closing quote must end the word.
                    guard index == end || isSeparator(line[index]) else { throw unbalanced }
                    return
                }
                if inner == UInt8(ascii: "\\") && index + 1 < end {
                    let escaped = line[index + 1]
                    if byte == UInt8(ascii: "\"") {
                        if escaped == UInt8(ascii: "x"), index + 3 < end, let high = hexValue(line[index + 2]),
                            let low = hexValue(line[index + 3])
                        {
                            word.append(high << 4 | low)
                            index += 4
                            continue
                        }
                        word.append(unescaped(escaped))
                        index += 2
                        continue
                    }
                    if escaped == UInt8(ascii: "'") {  // single quotes: only \' is an escape
                        word.append(escaped)
                        index += 2
                        continue
                    }
                }
                word.append(inner)
                index += 1
            }
        }
    }

    /// Skipped between words, and required after a closing quote: C's `isspace`, as Redis.
    private static func isSeparator(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    /// Ends an unquoted word: space, tab, CR, LF (not `\v` or `\f`), as Redis.
    private static func endsWord(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func isQuote(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") }

    private static func unescaped(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "a"): return 0x07
        default: return byte
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
