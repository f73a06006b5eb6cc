/// A key as the server stores it: up to 24 bytes inline (three words compared and hashed
/// directly), longer keys as a `String`. 32 bytes in all, the dictionary's key stride.
///
/// Why not `String`: a 16-byte key such as redis-benchmark's `key:000000012345` is one byte past
/// Swift's small-string limit, so every dictionary probe dereferenced a heap string (profiled:
/// `memcmp` and cache misses were a quarter of a SET's cost).
struct ServerKey: Hashable, Sendable, CustomStringConvertible {
    private enum Storage: Hashable {
        /// The bytes, zero-padded, and their count.
        case inline(UInt64, UInt64, UInt64, count: UInt8)
        case long(String)
    }

    private let storage: Storage

    init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let count = bytes.count
        if count <= 24 {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                for (offset, byte) in bytes.enumerated() { raw[offset] = byte }
            }
            storage = .inline(words.0, words.1, words.2, count: UInt8(count))
        } else {
            storage = .long(String(decoding: bytes, as: UTF8.self))
        }
    }

    init(_ text: String) { self.init(Array(text.utf8)) }

    /// The key's text.
    var description: String {
        switch storage {
        case .long(let text):
            return text
        case .inline(let word0, let word1, let word2, let count):
            var words = (word0, word1, word2)
            return withUnsafeBytes(of: &words) { String(decoding: $0.prefix(Int(count)), as: UTF8.self) }
        }
    }
}
