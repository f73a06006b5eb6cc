#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A key as the server stores it: its exact bytes, compared and hashed byte for byte (Redis keys
/// are bytes: no decoding, no Unicode equivalence, no replacement of invalid UTF-8). Up to 24
/// bytes are kept inline (three words compared and hashed directly), longer keys as an array.
/// 32 bytes in all, the dictionary's key stride.
///
/// Why not `String`: a 16-byte key such as redis-benchmark's `key:000000012345` is one byte past
/// Swift's small-string limit, so every dictionary probe dereferenced a heap string (profiled:
/// `memcmp` and cache misses were a quarter of a SET's cost); and two different byte strings can
/// be equal `String`s. A value type; any thread.
package struct ServerKey: Hashable, Sendable, CustomStringConvertible {
    private enum Storage: Hashable {
        /// The bytes, zero-padded, and their count.
        case inline(UInt64, UInt64, UInt64, count: UInt8)
        case long([UInt8])
    }

    private let storage: Storage

    package init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let count = bytes.count
        if count <= 24 {
            var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
            withUnsafeMutableBytes(of: &words) { InlineBytes.pack(bytes, into: $0) }
            storage = .inline(words.0, words.1, words.2, count: UInt8(count))
        } else {
            storage = .long(Array(bytes))
        }
    }

    package init(_ text: String) { self.init(Array(text.utf8)) }

    /// The key's bytes, exactly as the client sent them.
    package var bytes: [UInt8] {
        switch storage {
        case .long(let bytes):
            return bytes
        case .inline(let word0, let word1, let word2, let count):
            var words = (word0, word1, word2)
            return withUnsafeBytes(of: &words) { Array($0.prefix(Int(count))) }
        }
    }

    /// The key as text, for logs and tests (invalid UTF-8 shows as U+FFFD; never compared).
    package var description: String { String(decoding: bytes, as: UTF8.self) }
}

/// A SET's id as the server stores it: its exact bytes, like `ServerKey`. Up to 15 bytes are
/// kept inline (the 16th holds the count); the whole value is 17 bytes, so the registry's `any Hashable` identity holds it
/// without a heap box (an existential keeps up to 24 bytes inline), as it did the small
/// `String`s ids were before. A value type; any thread.
package struct ServerID: Hashable, Sendable, CustomStringConvertible {
    private enum Storage {
        /// The bytes, zero-padded, and their count in the last byte of the second word.
        case inline(UInt64, UInt64)
        case long([UInt8])
        /// A large id left where it arrived, in the request's buffer (see `init(taking:)`).
        case shared(SharedBytes)
    }

    private let storage: Storage

    /// The most bytes kept inline: two words less the count byte.
    static let inlineCapacity = 15

    /// From this size an id taken from a request keeps the request's buffer rather than a copy.
    package static let sharedFromBytes = 1 << 20

    package init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let count = bytes.count
        if count <= Self.inlineCapacity {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                InlineBytes.pack(bytes, into: raw)
                raw[15] = UInt8(count)
            }
            storage = .inline(words.0, words.1)
        } else {
            storage = .long(Array(bytes))
        }
    }

    /// The id a request carries, as `bytes`: a large one (from `sharedFromBytes`) is not
    /// copied but kept in the request's buffer, which it keeps alive. Copying 512 MiB (and
    /// faulting in its pages) held the loop for hundreds of milliseconds; the parser reserves
    /// a large bulk's room exactly, so the buffer is about the id's size, and it frees its own
    /// reference once the request has run (`RESPParser.releaseConsumedBuffer`).
    package init(taking bytes: ArraySlice<UInt8>) {
        if bytes.count >= Self.sharedFromBytes {
            self.init(storage: .shared(SharedBytes(bytes)))
        } else {
            self.init(bytes)
        }
    }

    private init(storage: Storage) { self.storage = storage }

    package init(_ text: String) { self.init(Array(text.utf8)) }

    /// Runs `body` on the id's bytes, wherever they are kept.
    package func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        switch storage {
        case .inline(let word0, let word1):
            var words = (word0, word1)
            return try withUnsafeBytes(of: &words) {
                try body(UnsafeRawBufferPointer(rebasing: $0.prefix(Int($0[15]))))
            }
        case .long(let bytes):
            return try bytes.withUnsafeBytes(body)
        case .shared(let shared):
            return try shared.bytes.withUnsafeBytes(body)
        }
    }

    /// Compares the bytes with `memcmp`, whatever keeps them: a SET of the same 512 MiB id again
    /// compares it with the stored one, and `Array`'s element-wise `==` held the loop for tens
    /// of milliseconds.
    package static func == (lhs: ServerID, rhs: ServerID) -> Bool {
        if case .inline(let a0, let a1) = lhs.storage, case .inline(let b0, let b1) = rhs.storage {
            return a0 == b0 && a1 == b1
        }
        return lhs.withBytes { a in
            rhs.withBytes { b in
                a.count == b.count && (a.count == 0 || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
            }
        }
    }

    package func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: $0) }
    }

    /// The id's bytes, exactly as the client sent them (a copy, for a large id).
    package var bytes: [UInt8] {
        switch storage {
        case .long(let bytes): return bytes
        case .inline, .shared: return withBytes { Array($0) }
        }
    }

    /// The id's bytes without a copy where they are kept in an array: for a reply.
    package var byteSlice: ArraySlice<UInt8> {
        switch storage {
        case .long(let bytes): return bytes[...]
        case .shared(let shared): return shared.bytes
        case .inline: return bytes[...]
        }
    }

    /// The id as text, for logs and tests (invalid UTF-8 shows as U+FFFD; never compared).
    package var description: String { String(decoding: bytes, as: UTF8.self) }
}

/// A large id's bytes, left in the buffer they arrived in. A class, so that an id stays one
/// word wide whatever keeps it. Immutable; any thread.
package final class SharedBytes: Sendable {
    package let bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }
}

/// Copies bytes into the zeroed words of an inline key or id. Any thread.
package enum InlineBytes {
    @inline(__always)
    static func pack<Bytes: Collection>(_ bytes: Bytes, into raw: UnsafeMutableRawBufferPointer)
    where Bytes.Element == UInt8 {
        // Contiguous input (the parser's slices) is one copy; anything else byte by byte.
        let copied: Void? = bytes.withContiguousStorageIfAvailable { source in
            raw.copyMemory(from: UnsafeRawBufferPointer(source))
        }
        if copied == nil {
            for (offset, byte) in bytes.enumerated() { raw[offset] = byte }
        }
    }
}
