import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// Keys, ids and messages are bytes: no decoding, no Unicode equivalence, at every length.
@Suite("taskid serve: byte-exact keys and ids")
struct ByteExactTests {
    /// `é` written as one precomposed scalar and as `e` plus a combining acute accent: equal
    /// as `String`s, different as bytes.
    static let precomposed: [UInt8] = [0xC3, 0xA9]
    static let decomposed: [UInt8] = [0x65, 0xCC, 0x81]

    /// Waits until `key`'s task has finished its run (bounded by the test's own time).
    func waitUntilFinished(_ client: TestClient, key: [UInt8]) async throws {
        while true {
            try await client.send(command: Array("TASK.PHASE".utf8), key)
            if try await client.replies(1) == ["+finished"] { return }
            await Task.yield()
        }
    }

    /// Long ids compare by their bytes (with `memcmp`): equal contents in two buffers are
    /// equal, one byte different or one byte longer is not, and inline never equals long.
    @Test func longIdsCompareByTheirBytes() {
        let value = [UInt8](repeating: 7, count: 1 << 20)
        var other = value
        #expect(ServerID(value) == ServerID(Array(value)))
        other[other.count - 1] = 8
        #expect(ServerID(value) != ServerID(other))
        #expect(ServerID(value) != ServerID(value + [7]))
        #expect(ServerID([UInt8](repeating: 7, count: 15)) != ServerID([UInt8](repeating: 7, count: 16)))
        #expect(ServerID("short") == ServerID("short") && ServerID("short") != ServerID("shorT"))
    }

    /// A large id taken from a request keeps the request's bytes, and is the same id as a copy:
    /// equal, hashed alike, and read back byte for byte.
    @Test func aLargeIdTakenFromARequestIsTheSameIdAsACopy() {
        let request = [UInt8](repeating: 1, count: 10) + (0..<(ServerID.sharedFromBytes + 5)).map { UInt8($0 & 0xFF) }
        let slice = request[10...]
        let taken = ServerID(taking: slice)
        let copied = ServerID(Array(slice))
        #expect(taken == copied && copied == taken)
        #expect(taken.hashValue == copied.hashValue)
        #expect(taken.byteSlice.elementsEqual(slice) && taken.bytes == Array(slice))
        #expect(ServerID(taking: request[0..<20]) == ServerID(Array(request[0..<20])), "a small one is copied")
        var other = Array(slice)
        other[0] ^= 1
        #expect(taken != ServerID(taking: other[...]))
    }

    @Test(arguments: [0, 23])
    func keysThatAreEqualStringsButDifferentBytesAreTwoKeys(prefixLength: Int) async throws {
        // 23 `x` puts both keys past the 24 bytes kept inline; 0 keeps them inline.
        let first = Array(repeating: UInt8(ascii: "x"), count: prefixLength) + Self.precomposed
        let second = Array(repeating: UInt8(ascii: "x"), count: prefixLength) + Self.decomposed
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send(command: Array("SET".utf8), first, Array("one".utf8))
            try await client.send(command: Array("SET".utf8), second, Array("two".utf8))
            try await client.send(command: Array("DBSIZE".utf8))
            #expect(try await client.replies(3) == ["+OK", "+OK", ":2"])
            try await waitUntilFinished(client, key: first)
            try await waitUntilFinished(client, key: second)
            try await client.send(command: Array("GET".utf8), first)
            #expect(try await client.replies(1) == ["[\"one\", \"1\"]"])
            try await client.send(command: Array("GET".utf8), second)
            #expect(try await client.replies(1) == ["[\"two\", \"1\"]"])
        }
    }

    @Test(arguments: [
        (precomposed, decomposed),
        ([0xFF], [0xFE]),
        // Past the 15 bytes an id keeps inline.
        (
            Array(repeating: UInt8(ascii: "i"), count: 20) + precomposed,
            Array(repeating: UInt8(ascii: "i"), count: 20) + decomposed
        ),
    ])
    func aDifferentByteSequenceIsANewIdentity(old: [UInt8], new: [UInt8]) async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            let key = Array("u".utf8)
            try await client.send(command: Array("SET".utf8), key, old)
            #expect(try await client.replies(1) == ["+OK"])
            try await waitUntilFinished(client, key: key)
            try await client.send(command: Array("SET".utf8), key, new)
            #expect(try await client.replies(1) == ["+OK"])
            try await waitUntilFinished(client, key: key)
            try await client.send(command: Array("GET".utf8), key)
            // The reply holds the new id's exact bytes, and generation 2: a new identity ran.
            let expected = Array("*2\r\n$\(new.count)\r\n".utf8) + new + Array("\r\n$1\r\n2\r\n".utf8)
            #expect(try await client.rawBytes(expected.count) == expected)
        }
    }

    @Test func echoAndPingReturnTheBytesSent() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send(command: Array("ECHO".utf8), [0xFF, 0xFE])
            try await client.send(command: Array("PING".utf8), [0x00, 0xC3])
            let expected: [UInt8] =
                Array("$2\r\n".utf8) + [0xFF, 0xFE, 13, 10] + Array("$2\r\n".utf8) + [0x00, 0xC3, 13, 10]
            #expect(try await client.rawBytes(expected.count) == expected)
        }
    }

    @Test func keysAndIdsKeepTheirBytesAtEveryLength() {
        for length in [0, 1, 15, 16, 23, 24, 25, 100] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: 0xF0 &+ $0) }
            #expect(ServerKey(bytes).bytes == bytes)
            #expect(ServerID(bytes).bytes == bytes)
            var changed = bytes
            if !changed.isEmpty {
                changed[changed.count - 1] ^= 1
                #expect(ServerKey(changed) != ServerKey(bytes))
                #expect(ServerID(changed) != ServerID(bytes))
            }
            // A trailing zero byte is not padding: "a" and "a\0" differ.
            #expect(ServerKey(bytes + [0]) != ServerKey(bytes))
            #expect(ServerID(bytes + [0]) != ServerID(bytes))
        }
    }

    @Test func anIdFitsTheIdentityExistentialWithoutABox() {
        // An `any Hashable` keeps up to three words inline; a larger id would cost a heap box
        // per SET.
        #expect(MemoryLayout<ServerID>.size <= 3 * MemoryLayout<Int>.size)
        // Nor would a larger stored result: every commit would box it.
        #expect(MemoryLayout<ServerResult>.size <= 3 * MemoryLayout<Int>.size)
    }

    @Test(
        arguments: [0, 1, 255, 256, 65_535, 65_536, 1 << 24, (1 << 40) + 12_345, ServerResult.maxGeneration] as [UInt64]
    )
    func aStoredResultKeepsItsGeneration(generation: UInt64) {
        let id = ServerID(Array("id".utf8))
        #expect(ServerResult(id: id, generation: generation).generation == generation)
        #expect(ServerResult(id: id, generation: generation).id == id)
    }

    @Test func aGenerationPast56BitsIsStoredAsTheLargest() {
        let result = ServerResult(id: ServerID(Array("id".utf8)), generation: .max)
        #expect(result.generation == ServerResult.maxGeneration)
    }
}
