import Foundation
import Observation
import TaskIdentity
import Testing
import UVLoop

// Every ```swift block of README.md, as printed there, compiled under Swift 6's strict
// concurrency (this target's language mode) and run, with the assertions that the README's
// comments promise. `scripts/check-readme` checks that each block appears here verbatim: edit
// the two together. Blocks that need another package (a manifest, SwiftNIO) are marked
// ```swift-nocheck in the README and are not here.
//
// Plain `import TaskIdentity`, not `@testable`: the examples use the public API only.

/// The search backend of the README's first example: the words that start with the query.
private func search(_ query: String) async throws -> [String] {
    ["swift", "swim", "swing", "sweet"].filter { $0.hasPrefix(query) }
}

/// The README's `fetchImage`: the URL's bytes, at once.
private func fetchImage(_ url: URL) async throws -> Data {
    Data(url.absoluteString.utf8)
}

@Observable final class ProfileModel {
    var baseURL = URL(string: "https://cdn.example.com")!
    var path = "avatars/42.png"
    var image: Data?
    @ObservationIgnored var scale = 2  // read by the identity below, never tracked
}

@Suite("The README's examples")
struct ReadmeExampleTests {
    /// The first screen's example, on a real loop: one search runs, for the last query.
    @Test func theFirstExampleRunsOneSearchForTheLastQuery() async throws {
        let loop = UVLoop(name: "io")
        try loop.start()
        let registry = TaskRegistry<String>(loop: loop)

        // Three keystrokes in ann's search box: each declares her search again, with the new query.
        for query in ["s", "sw", "swi"] {
            try registry.task("ann", id: query, debounce: .milliseconds(250)) { context in
                let results = try await search(query)  // cancelled if the query changes meanwhile
                context.commit(result: results)  // kept only while this run is the current one
            }
        }
        // One search runs, for "swi", 250 ms after the last keystroke: "s" and "sw" never start.
        for await update in registry.phaseUpdates(of: "ann") where update.phase.isFinal { break }
        let results = try await registry.snapshot(of: "ann")?.result(as: [String].self)
        try registry.remove("ann")  // the box closed: cancel whatever it still runs
        await registry.shutdown()
        await loop.shutdown()

        #expect(results == ["swift", "swim", "swing"])
    }

    /// "The loop": a task on the loop's executor, sleeping on its clock.
    @Test func theLoopIsAnExecutorAndAClock() async throws {
        let loop = UVLoop(name: "io")
        try loop.start()
        let answer = try await Task(executorPreference: loop) {
            try await loop.clock.sleep(for: .milliseconds(10))  // a libuv timer; cancellable
            return loop.inLoop  // true: every resumption is on the loop
        }.value
        try loop.syncShutdown()  // closes every handle; uv_loop_close == 0

        #expect(answer)
        #expect(loop.loopCloseResult == 0)
    }

    /// "The registry": an equal id leaves the run alone, a new id restarts it, remove cancels.
    @Test func theRegistryRestartsOnANewIDAndOnlyTheCurrentRunLands() throws {
        let loop = TestLoop()  // virtual time; the calling thread is the loop's thread
        let registry = TaskRegistry<String>(loop: loop)
        let shown = LoopBound("", loop: loop)  // state confined to the loop's thread

        func show(_ url: String) throws {
            try registry.task("avatar", id: url) { context in
                try await context.clock.sleep(for: .milliseconds(100))  // the download
                context.commit { shown.value = url }  // lands only while this run is current
            }
        }
        try show("a.png")
        loop.advance(by: .milliseconds(50))
        try show("a.png")  // an equal id: nothing happens, the download goes on
        try show("b.png")  // a new id: a.png's download is cancelled, b.png's starts
        loop.advance(by: .milliseconds(100))
        let phase = try registry.phase(of: "avatar")  // finished, and shown.value is "b.png"
        try registry.remove("avatar")  // the view disappeared: cancel everything the slot owns

        #expect(phase?.description == "finished")
        #expect(shown.value == "b.png")
        #expect(try registry.counters.started == 2)
        #expect(try registry.contains("avatar") == false)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
        #expect(loop.openTimerCount == 0)
    }

    /// "Identities from a sequence": a burst of queries from a stream, one search for the last.
    @Test func aStreamOfQueriesRunsOneSearchForTheLast() throws {
        let loop = TestLoop()
        let registry = TaskRegistry<String>(loop: loop)
        let (queries, typed) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
        try registry.task("box", identities: queries, debounce: .milliseconds(250)) { query, context in
            context.commit(result: try await search(query))
        }
        typed.yield("s")  // from any thread: each element is a declaration
        typed.yield("sw")
        loop.advance(by: .milliseconds(250))  // one search, for "sw"; typed.finish() would remove the slot

        #expect(try registry.result(of: "box", as: [String].self) == ["swift", "swim", "swing", "sweet"])
        #expect(try registry.counters.started == 1)
        typed.finish()
        loop.advance(by: .zero)
        #expect(try registry.contains("box") == false)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    /// "Identities that track their own dependencies": the avatar follows its URL, ignores the
    /// `@ObservationIgnored` scale and its own writes.
    @Test func theAvatarFollowsItsURLAndIgnoresTheScaleAndItsOwnWrites() throws {
        let loop = TestLoop()
        let registry = TaskRegistry<String>(loop: loop)

        let model = LoopBound(ProfileModel(), loop: loop)  // confined to the loop's thread
        try registry.task(
            "avatar", tracking: { model.value.baseURL.appending(path: "\(model.value.path)@\(model.value.scale)x") }
        ) {
            url, context in
            let image = try await fetchImage(url)  // the action's reads: never tracked
            context.commit { model.value.image = image }  // its writes restart nothing: `image` is not read above
        }

        loop.run()
        #expect(model.value.image == Data("https://cdn.example.com/avatars/42.png@2x".utf8))
        model.value.scale = 3  // @ObservationIgnored: restarts nothing
        loop.run()
        #expect(try registry.counters.started == 1)
        model.value.path = "avatars/43.png"
        loop.run()
        #expect(model.value.image == Data("https://cdn.example.com/avatars/43.png@3x".utf8))
        #expect(try registry.counters.started == 2)
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    /// "Tracing": a registry configured to record from its creation.
    @Test func aConfiguredRegistryTracesFromItsCreation() throws {
        let loop = TestLoop()
        var configuration = RegistryConfiguration()
        configuration.traceCapacity = 1_024  // record from the registry's creation
        let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
        for query in ["s", "sw"] {
            try registry.task("box", id: query, debounce: .milliseconds(250)) { context in
                context.commit(result: "results for \(query)")
            }
        }
        loop.advance(by: .milliseconds(250))
        let trace = try registry.stopTrace()!
        let json = trace.json()  // Trace Event JSON: open it in Perfetto or chrome://tracing
        // trace.lines, the same as text: "0ms box g1 declared s", "0ms box g2 declared sw",
        //   "0ms box g1 dropped(supersededByPolicy)", …, "250ms box g2 started", "250ms box g2 ended finished"

        #expect(json.hasPrefix(#"{"traceEvents":["#))
        #expect(
            trace.lines == [
                "0ms box g1 declared s",
                "0ms box g1 debounce until 250ms",
                "0ms box g2 declared sw",
                "0ms box g1 dropped(supersededByPolicy)",
                "0ms box g2 debounce until 250ms",
                "250ms box g2 debounce closed",
                "250ms box g2 started",
                "250ms box g2 commit",
                "250ms box g2 result",
                "250ms box g2 ended finished",
            ])
        #expect(try registry.result(of: "box", as: String.self) == "results for sw")
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }
}
