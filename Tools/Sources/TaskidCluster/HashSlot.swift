/// Redis Cluster's placement of keys: 16,384 hash slots, a key's slot being the CRC16 of its
/// bytes (XMODEM: polynomial 0x1021, initial value 0, no reflection) modulo 16,384. When the key
/// holds a hash tag, a `{` followed later by a `}` with at least one byte between them, only the
/// bytes between the first `{` and the first `}` after it are hashed, so that `{user1}.a` and
/// `{user1}.b` share a slot. Clients compute the same function to route requests. Any thread.
package enum HashSlot {
    /// Slots in all: 0...16383.
    package static let count = 16_384

    /// The slot of `key`, by the hash-tag rule above.
    package static func of<Bytes: Collection>(_ key: Bytes) -> Int where Bytes.Element == UInt8 {
        if let open = key.firstIndex(of: UInt8(ascii: "{")) {
            let afterOpen = key.index(after: open)
            if let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen {
                return Int(crc16(key[afterOpen..<close])) & (count - 1)
            }
        }
        return Int(crc16(key)) & (count - 1)
    }

    /// CRC-16/XMODEM of `bytes`, a byte at a time through a 256-entry table.
    package static func crc16<Bytes: Sequence>(_ bytes: Bytes) -> UInt16 where Bytes.Element == UInt8 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// The CRC of each byte value alone, shifted through the polynomial bit by bit.
    private static let table: [UInt16] = (0..<256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
