import Foundation
import Testing
import UVLoop

@testable import TaskIdentity

/// `taskid replay`: the binary on a trace recorded on a test loop, its figures and exit codes.
@Suite("taskid replay")
struct ReplayCommandTests {
    /// A trace of 4 sessions typing (each a letter every 60 ms, with a pause every tenth
    /// letter) under a 50 ms debounce, each search taking 30 ms, written to a temporary file.
    static func recordedTraceFile() throws -> URL {
        var configuration = RegistryConfiguration()
        configuration.traceCapacity = 1 << 18
        let loop = TestLoop()
        let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
        for step in 0..<800 {
            loop.advance(by: .milliseconds(step % 40 == 39 ? 400 : 15))
            let session = step % 4
            try registry.task("session-\(session)", id: "q\(step / 4)", debounce: .milliseconds(50)) { context in
                try await context.clock.sleep(for: .milliseconds(30))
                context.commit {}
            }
        }
        loop.advance(by: .seconds(1))
        let trace = try registry.stopTrace()!
        registry.startShutdown()
        loop.run()
        loop.shutdown()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("replay-\(UUID()).json")
        try trace.json().write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test func itPrintsTheTraceBesideItsReplays() async throws {
        let file = try Self.recordedTraceFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let taskid = try TaskidProcess(["replay", file.path, "--debounce", "100", "--json"])
        let output = await taskid.remainingOutput()
        #expect(await taskid.exit().status == 0)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let trace = try #require(report["trace"] as? [String: Any])
        let recorded = try #require(report["recorded"] as? [String: Any])
        let new = try #require(report["new"] as? [String: Any])
        // In virtual time both ways, the replay with the recorded settings is the trace.
        for field in ["declarations", "backend_calls", "wasted_calls", "answers", "most_running"] {
            #expect(trace[field] as? Int == recorded[field] as? Int, "\(field)")
        }
        #expect((new["backend_calls"] as? Int ?? .max) < (recorded["backend_calls"] as? Int ?? 0))
        let settings = try #require(report["recorded_settings"] as? [String: Any])
        #expect(settings["debounce_ms"] as? Int == 50)
        let table = try TaskidProcess(["replay", file.path, "--limit", "2", "--backend-ms", "5"])
        let text = await table.remainingOutput()
        #expect(await table.exit().status == 0)
        #expect(text.contains("backend calls") && text.contains("x real time"))
    }

    static let badInput: [([String], Int32)] = [
        (["replay", "/nonexistent/trace.json"], 66),
        (["replay", "/etc/hostname"], 65),
        (["replay", "t.json", "--debounce", "86400001"], 64),
        (["replay", "/bin/true"], 65),
        (["replay", "t.json", "--backend-ms", "fast"], 64),
        (["replay", "t.json", "--limit", "x"], 64),
    ]

    @Test(arguments: badInput)
    func badInputExitsWithItsCode(arguments: [String], status: Int32) async throws {
        let taskid = try TaskidProcess(arguments)
        let errors = await taskid.errorOutput()
        #expect(await taskid.exit().status == status, "\(errors)")
        #expect(!errors.isEmpty)
    }
}
