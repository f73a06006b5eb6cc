/// A size in bytes as Redis's configuration writes one: an integer, or an integer with a unit,
/// `k` `m` `g` for powers of 1000 and `kb` `mb` `gb` for powers of 1024, in any case
/// (`512mb`, `1GB`, `4096`). A value type; any thread.
package struct ByteCount: Sendable, Equatable, CustomStringConvertible {
    package let bytes: Int

    /// Exactly `bytes`.
    package init(_ bytes: Int) { self.bytes = bytes }

    /// Parses `text`; nil for anything that is not a non-negative size that fits in an `Int`.
    package init?(parsing text: some StringProtocol) {
        let lowered = text.lowercased()
        let units: [(String, Int)] = [
            ("kb", 1 << 10), ("mb", 1 << 20), ("gb", 1 << 30), ("k", 1_000), ("m", 1_000_000), ("g", 1_000_000_000),
            ("b", 1),
        ]
        var digits = Substring(lowered)
        var multiplier = 1
        for (suffix, value) in units where lowered.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            multiplier = value
            break
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let number = Int(digits), number >= 0 else { return nil }
        let (product, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { return nil }
        bytes = product
    }

    /// The size as the shortest exact Redis form: `512mb`, `1gb`, or plain bytes.
    package var description: String {
        for (suffix, unit) in [("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)]
        where bytes >= unit && bytes % unit == 0 {
            return "\(bytes / unit)\(suffix)"
        }
        return "\(bytes)"
    }
}
