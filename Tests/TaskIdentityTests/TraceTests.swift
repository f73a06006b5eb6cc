import Foundation
import Observation
import Testing
import UVLoop

@testable import TaskIdentity

/// The registry's trace: the events a scenario records, in order, on the test loop; the Trace
/// Event JSON it exports, parsed and checked against the format's rules; the ring's bound.
@Suite("Registry trace")
struct TraceTests {
    /// Search as you type: a burst of keystrokes inside the debounce window, a search cancelled
    /// by the next query (which ignores the cancellation and commits late: dropped), and the
    /// last query's search landing.
    private func searchAsYouType(_ registry: TaskRegistry<String>, _ loop: TestLoop) throws {
        let shown = Confined<String?>(nil)
        func type(_ query: String) throws {
            try registry.task("box", id: query, debounce: .milliseconds(250)) { context in
                try? await context.clock.sleep(for: .milliseconds(300))  // ignores its cancellation
                context.commit { shown.value = query }
            }
        }
        try type("s")
        loop.advance(ms: 50)
        try type("se")
        loop.advance(ms: 50)
        try type("sea")
        loop.advance(ms: 300)  // 400: the search for "sea" runs since 350
        try type("sear")
        loop.advance(ms: 600)
        #expect(shown.value == "sear")
    }

    @Test func aScenarioRecordsExactlyItsEventsInOrder() throws {
        let h = RegistryHarness<String>()
        try h.registry.startTrace()
        try searchAsYouType(h.registry, h.loop)
        let trace = try #require(try h.registry.stopTrace())
        #expect(
            trace.lines == [
                "0ms box g1 declared s",
                "0ms box g1 debounce until 250ms",
                "50ms box g2 declared se",
                "50ms box g1 dropped(supersededByPolicy)",
                "50ms box g2 debounce until 300ms",
                "100ms box g3 declared sea",
                "100ms box g2 dropped(supersededByPolicy)",
                "100ms box g3 debounce until 350ms",
                "350ms box g3 debounce closed",
                "350ms box g3 started",
                "400ms box g4 declared sear",
                "400ms box g3 cancelled(identityChanged)",
                "400ms box g4 debounce until 650ms",
                "400ms box g3 stale commit dropped",
                "400ms box g3 ended after cancel",
                "650ms box g4 debounce closed",
                "650ms box g4 started",
                "950ms box g4 commit",
                "950ms box g4 ended finished",
            ])
        #expect(trace.droppedEvents == 0)
        // Stopped: nothing more is recorded.
        try h.registry.task("box", id: "x") { _ in }
        h.loop.run()
        #expect(try h.registry.currentTrace() == nil)
        h.finish()
    }

    @Test func removalShutdownProgressAndResultsAreRecorded() throws {
        let h = RegistryHarness<String>()
        try h.registry.startTrace()
        try h.registry.task("a", id: 1, progressDelay: .milliseconds(10)) { context in
            try await context.clock.sleep(for: .milliseconds(20))
            context.commit(result: "done")
        }
        try h.registry.task("b", id: 1) { context in try await context.clock.sleep(for: .seconds(1)) }
        h.loop.advance(ms: 30)
        try h.registry.remove("a")
        h.registry.startShutdown()
        h.loop.run()
        let lines = try #require(try h.registry.currentTrace()).lines
        #expect(
            lines == [
                "0ms a g1 declared 1",
                "0ms b g1 declared 1",
                "0ms a g1 started",
                "0ms b g1 started",
                "10ms a g1 progress",
                "20ms a g1 commit",
                "20ms a g1 result",
                "20ms a g1 ended finished",
                "30ms a g1 removed",
                "30ms  g0 shutdown",
                "30ms b g1 removed",
                "30ms b g1 cancelled(registryShutDown)",
                "30ms b g1 ended after cancel",
            ])
        h.finish()
    }

    @Test func theRingKeepsTheLatestEventsAndCountsTheRest() throws {
        let full = RegistryHarness<String>()
        try full.registry.startTrace()
        try searchAsYouType(full.registry, full.loop)
        let all = try #require(try full.registry.stopTrace())
        full.finish()

        let h = RegistryHarness<String>()
        try h.registry.startTrace(capacity: 5)
        try searchAsYouType(h.registry, h.loop)
        let kept = try #require(try h.registry.stopTrace())
        #expect(kept.capacity == 5)
        #expect(kept.eventCount == 5)
        #expect(kept.droppedEvents == UInt64(all.eventCount - 5))
        #expect(kept.lines == Array(all.lines.suffix(5)))
        // The count without a copy: nil when not recording, the events kept (at most the
        // capacity) while recording, off the loop a typed error.
        #expect(try h.registry.traceEventCount() == nil)
        try h.registry.startTrace(capacity: 3)
        #expect(try h.registry.traceEventCount() == 0)
        try h.registry.task("x", id: 1) { _ in }
        let afterOne = try #require(try h.registry.traceEventCount())
        #expect(afterOne >= 1 && afterOne <= 3)
        try searchAsYouType(h.registry, h.loop)
        #expect(try h.registry.traceEventCount() == 3)
        #expect(try h.registry.currentTrace()?.eventCount == 3)
        let registry = h.registry
        let offLoop = PlainThread { () -> RegistryError? in
            do throws(RegistryError) {
                _ = try registry.traceEventCount()
                return nil
            } catch { return error }
        }
        #expect(offLoop.join() == .calledOffLoopThread)
        _ = try h.registry.stopTrace()
        #expect(kept.json().contains("\"\(all.eventCount - 5) earlier events dropped\""))
        let parsed = try TraceJSON(kept.json())
        #expect(parsed.other["droppedEvents"] as? Int == all.eventCount - 5)
        h.finish()
    }

    @Test func badCallsAreTypedErrors() async throws {
        let h = RegistryHarness<String>()
        #expect(throws: RegistryError.invalidTraceCapacity(0)) { try h.registry.startTrace(capacity: 0) }
        #expect(try h.registry.stopTrace() == nil)
        #expect(try h.registry.currentTrace() == nil)
        let registry = h.registry
        let offLoop = PlainThread { () -> RegistryError? in
            do throws(RegistryError) {
                try registry.startTrace()
                return nil
            } catch { return error }
        }
        #expect(offLoop.join() == .calledOffLoopThread)
        try h.registry.startTrace()
        let trace = try #require(try h.registry.currentTrace())
        #expect(throws: TraceWriteError.self) { try trace.write(toFile: "/nonexistent-directory/trace.json") }
        do {
            try trace.write(toFile: "/nonexistent-directory/trace.json")
        } catch {
            #expect(error.errno == ENOENT)
            #expect(error.description.contains("/nonexistent-directory/trace.json"))
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(getpid()).json").path
        try trace.write(toFile: path)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == trace.json())
        try? FileManager.default.removeItem(atPath: path)
        h.finish()
    }

    /// A run on another executor says which; on the loop it says nothing more.
    @Test func aRunOffTheLoopNamesItsExecutor() throws {
        let h = RegistryHarness<String>()
        try h.registry.startTrace()
        try h.registry.task("here", id: 1) { _ in }
        h.loop.run()
        let lines = try #require(try h.registry.currentTrace()).lines
        #expect(lines.contains("0ms here g1 started"))
        h.finish()
    }

    /// Tracks are tasks, not descriptions: key `a/b` and task `b` of key `a` read alike but are
    /// two tracks, each with its own runs.
    @Test func tasksWhoseLabelsReadAlikeAreTwoTracks() throws {
        let h = RegistryHarness<String>()
        try h.registry.startTrace()
        try h.registry.task("a/b", id: 1) { context in try await context.clock.sleep(for: .milliseconds(10)) }
        try h.registry.task("a", name: "b", id: 1) { context in try await context.clock.sleep(for: .milliseconds(20)) }
        h.loop.advance(ms: 30)
        let parsed = try TraceJSON(try #require(try h.registry.currentTrace()).json())
        var names: [Int: String] = [:]
        var runs: [String: [Double]] = [:]
        for event in parsed.events where event["ph"] as? String == "M" && event["name"] as? String == "thread_name" {
            names[event["tid"] as! Int] = (event["args"] as! [String: Any])["name"] as? String
        }
        for event in parsed.events where event["ph"] as? String == "X" {
            runs[names[event["tid"] as! Int]!, default: []].append(event["dur"] as! Double)
        }
        #expect(runs == ["a/b": [10_000], "a/b (2)": [20_000]])
        h.finish()
    }

    /// A sharded registry's trace is its shards' traces merged in time order; each shard's
    /// loop is a real one here.
    @Test func aShardedRegistrysTraceMergesItsShards() async throws {
        let group = try UVLoopGroup(loops: 2, namePrefix: "trace")
        let registry = ShardedTaskRegistry<Int>(group: group, shardHash: { $0 })
        await #expect(throws: RegistryError.invalidTraceCapacity(0)) { try await registry.startTrace(capacity: 0) }
        #expect(try await registry.currentTrace() == nil)
        try await registry.startTrace(capacity: 100)
        for key in 0..<4 { try registry.task(key, id: key, executor: key == 3 ? .global : .loop) { _ in } }
        await registry.flush()
        while try await registry.countersSnapshot().runningActions > 0 { await Task.yield() }
        let trace = try #require(try await registry.stopTrace())
        #expect(trace.capacity == 200)
        #expect(try await registry.stopTrace() == nil)
        let starts = trace.lines.filter { $0.contains(" started") }.map {
            $0.split(separator: " ").dropFirst().joined(separator: " ")
        }
        #expect(Set(starts) == ["0 g1 started", "1 g1 started", "2 g1 started", "3 g1 started on global"])
        let times = trace.events.map(\.time)
        #expect(times == times.sorted())
        let parsed = try TraceJSON(trace.json())
        #expect(parsed.other["events"] as? Int == trace.eventCount)
        await registry.shutdown()
        try group.syncShutdown()
    }

    /// A scenario with every kind of span: runs (finished, cancelled, still running at the
    /// export), debounce windows, instants, and a flow from an observed write to its restart.
    @Test func theExportIsValidTraceEventJSON() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        try registry.startTrace()
        try searchAsYouType(registry, loop)
        // "writer" writes what "reader"'s identity reads: a flow from its run to the restart.
        let model = LoopBound(Counter(), loop: loop)
        try registry.task("reader", tracking: { model.value.value }) { _, context in
            try await context.clock.sleep(for: .milliseconds(10))
        }
        loop.run()
        // An observed task's run: the registry keeps the causal link of its writes.
        try registry.task("writer", tracking: { model.value.other }) { _, context in
            try await context.clock.sleep(for: .milliseconds(5))
            context.commit { model.value.value = 1 }
            try await context.clock.sleep(for: .milliseconds(5))
        }
        loop.advance(ms: 20)
        try registry.task("long", id: 1, debounce: .milliseconds(5)) { context in
            try await context.clock.sleep(for: .seconds(10))
        }
        try registry.task("waits", id: 1, debounce: .seconds(5)) { _ in }
        loop.advance(ms: 10)  // "long" runs, "waits" waits: both still open at the export
        let trace = try #require(try registry.currentTrace())
        let parsed = try TraceJSON(trace.json())
        #expect(parsed.other["droppedEvents"] as? Int == 0)
        #expect(parsed.other["events"] as? Int == trace.eventCount)

        var names: [Int: String] = [:]
        var spansByTrack: [Int: [(start: Double, end: Double, args: [String: Any])]] = [:]
        var windows: [Int: (begin: Int, end: Int)] = [:]
        var flows: [Int: (start: Int, finish: Int)] = [:]
        for event in parsed.events {
            let phase = try #require(event["ph"] as? String)
            #expect(event["name"] is String, "\(event)")
            let tid = try #require(event["tid"] as? Int, "\(event)")
            #expect(event["pid"] as? Int == 1)
            if phase == "M" {
                if event["name"] as? String == "thread_name" {
                    names[tid] = (event["args"] as? [String: Any])?["name"] as? String
                }
                continue
            }
            let ts = try #require(event["ts"] as? Double, "\(event)")
            #expect(ts >= 0)
            switch phase {
            case "X":
                let dur = try #require(event["dur"] as? Double)
                #expect(dur >= 0)
                let args = try #require(event["args"] as? [String: Any])
                #expect(args["generation"] is Int && args["identity"] is String && args["phase"] is String)
                spansByTrack[tid, default: []].append((ts, ts + dur, args))
            case "i":
                #expect(["t", "g"].contains(event["s"] as? String))
            case "b", "e":
                let id = try #require(event["id"] as? Int)
                var pair = windows[id] ?? (0, 0)
                if phase == "b" { pair.begin += 1 } else { pair.end += 1 }
                windows[id] = pair
            case "s", "f":
                let id = try #require(event["id"] as? Int)
                var pair = flows[id] ?? (0, 0)
                if phase == "s" { pair.start += 1 } else { pair.finish += 1 }
                flows[id] = pair
                if phase == "f" { #expect(event["bp"] as? String == "e") }
            default:
                Issue.record("unexpected phase \(phase)")
            }
        }
        // Every track is named; spans on one track never overlap (one current run at a time).
        for (tid, spans) in spansByTrack {
            #expect(names[tid] != nil)
            let ordered = spans.sorted { $0.start < $1.start }
            for (earlier, later) in zip(ordered, ordered.dropFirst()) {
                #expect(later.start >= earlier.end, "track \(names[tid] ?? "?"): spans overlap")
            }
        }
        #expect(Set(names.values).isSuperset(of: ["registry", "box", "reader", "writer", "long", "waits"]))
        // The search scenario's runs: g3 cancelled, g4 finished.
        let boxTrack = try #require(names.first { $0.value == "box" }?.key)
        #expect(
            spansByTrack[boxTrack]?.map { "\($0.args["generation"]!) \($0.args["phase"]!)" }
                == ["3 cancelled(identityChanged)", "4 finished"])
        let longTrack = try #require(names.first { $0.value == "long" }?.key)
        #expect(spansByTrack[longTrack]?.map { "\($0.args["phase"]!)" } == ["running"])
        // Windows begin and end in pairs; flows start and finish in pairs; there is a flow.
        #expect(!windows.isEmpty && windows.values.allSatisfy { $0.begin == 1 && $0.end == 1 })
        #expect(flows.count == 1 && flows.values.allSatisfy { $0.start == 1 && $0.finish == 1 })
        h.finish()
    }
}

/// A Trace Event JSON document, parsed.
struct TraceJSON {
    let events: [[String: Any]]
    let other: [String: Any]

    init(_ text: String) throws {
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        let document = try #require(object as? [String: Any])
        events = try #require(document["traceEvents"] as? [[String: Any]])
        other = try #require(document["otherData"] as? [String: Any])
        #expect(document["displayTimeUnit"] as? String == "ms")
    }
}
