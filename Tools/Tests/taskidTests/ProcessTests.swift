import Foundation
import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The built binary, as scripts run it: its output, its ready line and its signals.
@Suite("taskid as a process")
struct ProcessTests {
    @Test func versionPrintsTheVersionAndExitsZero() async throws {
        let taskid = try TaskidProcess(["--version"])
        #expect(await taskid.remainingOutput() == "\(taskidVersion)\n")
        #expect(await taskid.exit() == (.exit, 0))
    }

    @Test func aBadOptionExits64AndSaysWhy() async throws {
        let taskid = try TaskidProcess(["serve", "--loops", "0"])
        #expect(await taskid.remainingOutput() == "", "no ready line")
        #expect(await taskid.errorOutput().contains("--loops takes an integer in 1...64, got '0'"))
        #expect(await taskid.exit() == (.exit, 64))
    }

    @Test func theReadyLineNamesTheBoundPortAndIsTheOnlyOutput() async throws {
        let taskid = try TaskidProcess(["serve", "--port", "0", "--loops", "2", "--log-level", "warning"])
        let line = try #require(await taskid.readLine(), "a ready line")

        let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(Set(fields.keys) == ["event", "host", "port", "loops", "version", "pid"])
        let ready = try JSONDecoder().decode(ReadyLine.self, from: Data(line.utf8))
        #expect(ready.event == "ready")
        #expect(ready.host == "127.0.0.1")
        #expect(ready.loops == 2)
        #expect(ready.version == taskidVersion)
        #expect(ready.pid == taskid.process.processIdentifier)
        #expect(ready.port > 0)

        // The port is the bound one: a client gets an answer there.
        let clientLoop = UVLoop(name: "client")
        try clientLoop.start()
        let client = TestClient(loop: clientLoop, port: ready.port)
        try await client.connect()
        try await client.send("PING\r\n")
        #expect(try await client.replies(1) == ["+PONG"])
        await client.close()
        try clientLoop.syncShutdown()

        taskid.send(SIGTERM)
        #expect(await taskid.exit() == (.exit, 0))
        #expect(await taskid.remainingOutput() == "", "exactly one line on standard output")
    }

    @Test func sigtermRightAfterTheReadyLineShutsDownGracefully() async throws {
        let taskid = try TaskidProcess(["serve", "--port", "0"])
        _ = try #require(await taskid.readLine(), "a ready line")
        taskid.send(SIGTERM)
        #expect(await taskid.exit() == (.exit, 0), "graceful: exit 0, not killed by the signal")
        #expect(await taskid.errorOutput().contains("stopped"))
    }

    @Test func aTraceFileThatCannotBeWrittenAtTheEndExitsOne() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("taskid-trace-dir-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("t.json").path
        let taskid = try TaskidProcess(["serve", "--port", "0", "--trace", path])
        _ = try #require(await taskid.readLine(), "a ready line: the directory existed at start")
        // Gone while the server runs: the write at shutdown fails.
        try FileManager.default.removeItem(at: directory)
        taskid.send(SIGTERM)
        #expect(await taskid.exit() == (.exit, 1))
        let log = await taskid.errorOutput()
        #expect(log.contains("trace not written"), "\(log)")
        #expect(log.contains("the --trace file was not written"), "\(log)")
    }

    @Test func aClusterFileThatLeavesSlotsUnservedIsWarnedOfAtStart() async throws {
        let port = try Self.freePort()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("taskid-gap-\(getpid()).conf").path
        try "me 127.0.0.1:\(port) 0-99 200-16383\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { unlink(path) }
        let taskid = try TaskidProcess(["serve", "--cluster-config", path, "--cluster-node", "me"])
        _ = try #require(await taskid.readLine(), "a ready line: such a cluster still starts")
        taskid.send(SIGTERM)
        #expect(await taskid.exit() == (.exit, 0))
        #expect(
            await taskid.errorOutput().contains(
                "100 slots are served by no node in the cluster file (100-199): their keys get -CLUSTERDOWN"))
    }

    /// A free loopback port: bound to 0, read back, released.
    static func freePort() throws -> Int {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        // sockaddr_in viewed as the sockaddr the C API takes; scoped to the calls.
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0
            }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether a TCP connection to the loopback port succeeds now.
    static func accepts(port: Int) -> Bool {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        // sockaddr_in viewed as the sockaddr the C API takes; scoped to the call.
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    @Test func sigtermTheMomentThePortOpensShutsDownGracefully() async throws {
        // The signal arrives before the ready line, as soon as a connection succeeds: the
        // handlers must already be installed when the port opens.
        for _ in 0..<20 {
            let port = try Self.freePort()
            let taskid = try TaskidProcess(["serve", "--port", "\(port)"])
            while !Self.accepts(port: port) {}
            taskid.send(SIGTERM)
            #expect(await taskid.exit() == (.exit, 0), "graceful: exit 0, not killed by the signal")
        }
    }

    @Test func sigintShutsDownGracefullyToo() async throws {
        let taskid = try TaskidProcess(["serve", "--port", "0"])
        _ = try #require(await taskid.readLine(), "a ready line")
        taskid.send(SIGINT)
        #expect(await taskid.exit() == (.exit, 0))
    }

    @Test func aPortInUseExits1WithoutAReadyLine() async throws {
        let first = try TaskidProcess(["serve", "--port", "0"])
        let line = try #require(await first.readLine(), "a ready line")
        let port = try JSONDecoder().decode(ReadyLine.self, from: Data(line.utf8)).port

        let second = try TaskidProcess(["serve", "--port", "\(port)"])
        #expect(await second.remainingOutput() == "")
        #expect(await second.errorOutput().contains("cannot listen on 127.0.0.1:\(port)"))
        #expect(await second.exit() == (.exit, 1))

        first.send(SIGTERM)
        #expect(await first.exit() == (.exit, 0))
    }
}
