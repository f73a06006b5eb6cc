import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// `--maxmemory`: past the bound, writes are refused with `-OOM` and reads and deletes go on;
/// INFO reports the memory the bound is measured against.
///
/// Enabled where malloc reports its figures: a sanitizer's allocator (ThreadSanitizer's, in
/// `scripts/test --all`) replaces glibc's, whose figures then read 0, and the server warns at
/// start that the bound cannot be enforced.
@Suite(
    "taskid serve: --maxmemory and INFO's memory",
    .enabled(if: MemoryFigures.now().usedBytes > 0, "malloc reports the memory it has handed out"))
struct MaxMemoryTests {
    @Test func pastTheBoundWritesAreRefusedAndReadsGoOn() async throws {
        try await withServer { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("SET kept 1\r\n")
            #expect(try await client.replies(1) == ["+OK"])
        }
        // A bound of one byte: any process is past it.
        try await withServer({ $0.maxMemoryBytes = 1 }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send(
                "SET k 1\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n2\r\nGET k\r\nDEL k\r\nEXISTS k\r\nTASK.TRACE START 10\r\nPING\r\n"
            )
            let replies = try await client.replies(7)
            let oom = "-" + RegistryServer.outOfMemory
            #expect(Array(replies[0..<2]) == [oom, oom], "the fast path and the general one")
            #expect(Array(replies[2..<5]) == ["nil", ":0", ":0"])
            #expect(replies[5].hasPrefix("-OOM a trace of 10 events a loop takes about"))
            #expect(replies[6] == "+PONG")
            // Inside MULTI, as Redis: refused when queued, and EXEC aborts.
            try await client.send("MULTI\r\nSET k 3\r\nEXEC\r\n")
            #expect(
                try await client.replies(3) == [
                    "+OK", oom, "-EXECABORT Transaction discarded because of previous errors.",
                ])
        }
    }

    /// Large values are counted before malloc's figures are read again: with room for 16 MiB,
    /// eight 4 MiB SETs are not all let in (they were: fewer than 1,024 writes apart).
    @Test func largeValuesAreCountedBeforeMallocIsReadAgain() async throws {
        let room = 16 << 20
        try await withServer({ $0.maxMemoryBytes = MemoryFigures.now().usedBytes + room }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            let value = [UInt8](repeating: UInt8(ascii: "v"), count: 4 << 20)
            var replies: [String] = []
            for index in 0..<8 {  // one at a time: each value is stored before the next comes
                try await client.send(command: Array("SET".utf8), Array("k\(index)".utf8), value)
                replies += try await client.replies(1)
            }
            let accepted = replies.filter { $0 == "+OK" }.count
            #expect(replies.allSatisfy { $0 == "+OK" || $0 == "-" + RegistryServer.outOfMemory })
            // At most what fits (other suites, in this process, may use some of the room too).
            #expect(accepted <= room / value.count + 1, "\(replies)")
        }
    }

    @Test func infoReportsTheMemoryTheBoundIsMeasuredAgainst() async throws {
        try await withServer({ $0.maxMemoryBytes = 1 << 40 }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send("INFO\r\n")
            let info = try #require(try await client.replies(1).first)
            func field(_ name: String) -> Int? {
                info.split(separator: "\r\n").first { $0.hasPrefix("=txt:\(name):") || $0.hasPrefix("\(name):") }
                    .flatMap { Int($0.split(separator: ":").last!) }
            }
            #expect((field("used_memory") ?? 0) > 0)
            #expect((field("used_memory_rss") ?? 0) > 0)
            #expect(field("maxmemory") == 1 << 40)
            #expect(info.contains("maxmemory_policy:noeviction"))
            #expect(info.contains("mem_fragmentation_ratio:"))
        }
    }
}
