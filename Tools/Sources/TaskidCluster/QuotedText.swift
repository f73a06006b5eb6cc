/// How `taskid` quotes text it was given (a file's line, an option's value) in an error
/// message: bounded, and with control characters escaped, so that what was given never floods
/// a terminal or reaches it raw. A namespace; any thread.
package enum QuotedText {
    /// At most `limit` characters of `text`, for an error message: control characters (ANSI
    /// escapes among them) escaped, so that a file's bytes never reach a terminal raw, and a
    /// long text cut, with its length said.
    package static func excerpt(_ text: some StringProtocol, limit: Int = 64) -> String {
        var shown = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                return shown + "… (\(text.utf8.count) bytes)"
            }
            let value = scalar.value
            shown +=
                value < 0x20 || value == 0x7F || (0x80...0x9F).contains(value) || value == 0xFEFF
                ? scalar.escaped(asASCII: true) : String(scalar)
            count += 1
        }
        return shown
    }
}
