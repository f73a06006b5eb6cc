/// A key as the server stores it: up to 24 bytes inline (three words compared and hashed
/// directly), longer keys as a `String`.
///
/// Why not `String`: a 16-byte key such as redis-benchmark's `key:000000012345` is one byte past
/// Swift's small-string limit, so every dictionary probe dereferenced a heap string (profiled:
/// `memcmp` and cache misses were a quarter of a SET's cost).
struct ServerKey: Hashable, Sendable, CustomStringConvertible {
    private let word0: UInt64
    private let word1: UInt64
    private let word2: UInt64
    private let length: Int
    private let long: String?

    init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        length = bytes.count
        if bytes.count <= 24 {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                for (offset, byte) in bytes.enumerated() { raw[offset] = byte }
            }
            (word0, word1, word2) = words
            long = nil
        } else {
            (word0, word1, word2) = (0, 0, 0)
            long = String(decoding: bytes, as: UTF8.self)
        }
    }

    init(_ text: String) { self.init(Array(text.utf8)) }

    /// The key's text.
    var description: String {
        if let long { return long }
        var words = (word0, word1, word2)
        return withUnsafeBytes(of: &words) { String(decoding: $0.prefix(length), as: UTF8.self) }
    }
}
