import Testing
import UVLoop

@testable import TaskIdentity

/// The scenarios that define `.task(id:)` semantics, each on the deterministic test loop,
/// asserting the exact sequence of starts, cancellations, commits and phases.
@Suite("Registry scenarios")
struct ScenarioTests {
    /// 1. An image loader whose URL changes.
    @Test func imageLoaderRestartsOnURLChangeAndOnlyTheNewImageCommits() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let shown = Confined<String?>(nil)
        let phases = PhaseRecorder(registry, "avatar")
        func load(_ url: String) throws {
            try registry.task("avatar", id: url) { context in
                log.add("start \(url) g\(context.generation)")
                try await context.clock.sleep(for: .milliseconds(100))  // the download
                context.commit { shown.value = url }
                log.add("loaded \(url)")
            }
        }
        let onceRuns = Confined(0)
        func declareOnce() throws {
            try registry.task("avatar", name: "analytics") { _ in onceRuns.value += 1 }
        }
        try load("a.png")
        try declareOnce()
        loop.advance(ms: 50)
        try load("b.png")  // the URL changes mid-download
        try declareOnce()
        loop.advance(ms: 200)
        #expect(log.take() == ["start a.png g1", "start b.png g2", "loaded b.png"])
        #expect(shown.value == "b.png")
        #expect(onceRuns.value == 1, "a task without id does not restart when the view re-renders")
        #expect(phases.take() == ["g1 running", "g1 cancelled(identityChanged)", "g2 running", "g2 finished"])
        #expect(try registry.counters.staleCommitsDropped == 0, "a.png observed its cancellation in the sleep")
        h.finish()
    }

    /// 2. A compound identity: base URL (from the environment) and path.
    @Test func compoundIdentityRestartsWhenEitherPartChanges() throws {
        let h = RegistryHarness<Int>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        func declare(_ base: String, _ path: String) throws {
            try registry.task(1, id: base, path) { context in
                let identity = context.id(as: CompoundIdentity<String, String>.self)!
                log.add("fetch \(identity.values.0)\(identity.values.1)")
            }
        }
        try declare("https://a", "/x")
        loop.run()
        try declare("https://a", "/x")  // unchanged: nothing
        loop.run()
        try declare("https://b", "/x")  // base changed
        loop.run()
        try declare("https://b", "/y")  // path changed
        loop.run()
        try declare("https://b", "/y")
        loop.run()
        #expect(log.take() == ["fetch https://a/x", "fetch https://b/x", "fetch https://b/y"])
        #expect(try registry.counters.unchanged == 2)
        #expect(try registry.generation(of: 1) == 3)
        h.finish()
    }

    /// 3. Switching categories: only one load active per slot; the last category commits.
    @Test func switchingCategoriesCancelsTheLoadBeforeItsResultsLand() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let products = Confined<[String]>([])
        let active = Confined(0)
        let maxActive = Confined(0)
        func show(_ category: String) throws {
            try registry.task("catalog", id: category, policy: .awaitPrevious) { context in
                active.value += 1
                maxActive.value = max(maxActive.value, active.value)
                defer { active.value -= 1 }
                log.add("load \(category)")
                do {
                    try await context.clock.sleep(for: .milliseconds(80))
                } catch {
                    log.add("cancelled \(category)")
                    throw error
                }
                context.commit { products.value = ["\(category)-1", "\(category)-2"] }
            }
        }
        try show("shoes")
        loop.advance(ms: 30)
        try show("hats")
        loop.advance(ms: 30)
        try show("bags")
        loop.advance(ms: 200)
        #expect(log.take() == ["load shoes", "cancelled shoes", "load hats", "cancelled hats", "load bags"])
        #expect(products.value == ["bags-1", "bags-2"])
        #expect(maxActive.value == 1, "each load starts only once the cancelled one has ended")
        let counters = try registry.counters
        #expect(counters.started == 3)
        #expect(counters.cancelled == 2)
        #expect(counters.staleCommitsDropped == 0)
        h.finish()
    }

    /// 4. A long-running `for await` over server status updates, restarted when the server changes.
    @Test func streamIterationFollowsTheSelectedServer() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        var feeds: [String: AsyncStream<String>.Continuation] = [:]
        var streams: [String: AsyncStream<String>] = [:]
        for server in ["alpha", "beta"] {
            let (stream, continuation) = AsyncStream.makeStream(of: String.self)
            streams[server] = stream
            feeds[server] = continuation
        }
        let allStreams = streams
        func follow(_ server: String) throws {
            try registry.task("status", id: server) { context in
                for await status in allStreams[server]! {
                    context.commit { log.add("\(server): \(status)") }
                }
                log.add("\(server) iteration ended")
            }
        }
        try follow("alpha")
        loop.run()
        feeds["alpha"]!.yield("up")
        loop.run()
        try follow("beta")
        loop.run()
        feeds["alpha"]!.yield("down")  // nobody listens to alpha any more
        feeds["beta"]!.yield("up")
        loop.run()
        feeds["beta"]!.yield("degraded")
        loop.run()
        #expect(log.take() == ["alpha: up", "alpha iteration ended", "beta: up", "beta: degraded"])
        #expect(try registry.counters.staleCommitsDropped == 0)
        h.finish()
        #expect(log.take() == ["beta iteration ended"], "shutdown cancels the remaining iteration")
    }

    /// 5. State-driven work: a trigger moves the id idle → running; the action does the work and
    /// moves it back; repeated triggers while running do nothing.
    @Test func stateDrivenWorkRunsOncePerTrigger() throws {
        enum State: Hashable, Sendable { case idle, running }
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let state = Confined(State.idle)
        @Sendable func render() throws {
            let current = state.value
            try registry.task("sync", id: current) { context in
                guard current == .running else { return }
                log.add("work started")
                try await context.clock.sleep(for: .milliseconds(100))
                log.add("work done")
                context.commit { state.value = .idle }
                // The state changed: the view re-renders on the next turn, as SwiftUI's does.
                try context.clock.loop.execute { try? render() }
            }
        }
        func trigger() throws {
            if state.value == .idle { state.value = .running }
            try render()
        }
        try render()
        loop.run()
        try trigger()
        loop.advance(ms: 10)
        try trigger()  // still running: same id, nothing happens
        loop.advance(ms: 200)
        try trigger()
        loop.advance(ms: 200)
        #expect(log.take() == ["work started", "work done", "work started", "work done"])
        #expect(state.value == .idle)
        #expect(try registry.counters.unchanged == 1)
        #expect(try registry.counters.cancelled == 0, "moving back to idle after the work never cancels it")
        h.finish()
    }

    /// 6. A delayed spinner at 150 ms.
    @Test func delayedProgressOnlyForSlowRuns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        let phases = PhaseRecorder(registry, "page")
        func load(_ id: Int, takes milliseconds: Int) throws {
            try registry.task("page", id: id, progressDelay: .milliseconds(150)) { context in
                try await context.clock.sleep(for: .milliseconds(milliseconds))
            }
        }
        try load(1, takes: 100)
        loop.advance(ms: 99)
        #expect(try !registry.showsProgress(of: "page"))
        loop.advance(ms: 500)
        #expect(phases.take() == ["g1 running", "g1 finished"], "a 100 ms run never shows progress")

        try load(2, takes: 400)
        loop.advance(ms: 149)
        #expect(try !registry.showsProgress(of: "page"))
        loop.advance(ms: 1)
        #expect(try registry.showsProgress(of: "page"), "on from 150 ms")
        loop.advance(ms: 249)
        #expect(try registry.showsProgress(of: "page"))
        loop.advance(ms: 1)
        #expect(try !registry.showsProgress(of: "page"), "off when the run ends at 400 ms")
        #expect(phases.take() == ["g2 running", "g2 running progress", "g2 finished"])
        h.finish()
    }

    /// 7. Search as you type with a 250 ms debounce.
    @Test func searchDebounceRunsOneSearchForTheLastQuery() throws {
        /// What a view shows for the search slot.
        enum LoadState: Equatable { case empty, loading, loaded([String]), failed(String) }
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let results = Confined<[String]>([])
        let phases = PhaseRecorder(registry, "search")
        func type(_ query: String) throws {
            if query.isEmpty {
                try registry.task("search", id: query) { context in
                    context.commit { results.value = [] }  // clear, without searching
                }
                return
            }
            try registry.task("search", id: query, debounce: .milliseconds(250)) { context in
                log.add("search \(query)")
                try await context.clock.sleep(for: .milliseconds(40))  // the request
                context.commit { results.value = ["\(query)ift", "\(query)ing"] }
            }
        }
        try type("s")
        loop.advance(ms: 100)
        try type("sw")
        loop.advance(ms: 100)
        try type("swi")
        loop.advance(ms: 249)
        #expect(log.events.isEmpty, "nothing runs inside the window, and no Swift task exists")
        #expect(try registry.counters.started == 0)
        loop.advance(ms: 1)
        #expect(log.take() == ["search swi"])
        loop.advance(ms: 40)
        #expect(results.value == ["swiift", "swiing"])

        try type("swa")
        loop.advance(ms: 260)  // its search is in flight…
        try type("")  // …when the field is cleared
        loop.run()
        #expect(results.value == [])
        loop.advance(ms: 100)
        #expect(results.value == [], "the cancelled search never lands")
        #expect(log.take() == ["search swa"])

        let view = phases.updates.dropFirst().map { update -> LoadState in
            switch update.phase {
            case .waiting, .running: return .loading
            case .finished: return .loaded([])
            case .failed(let error): return .failed("\(error)")
            case .idle, .cancelled: return .empty
            }
        }
        #expect(!view.contains { if case .failed = $0 { return true } else { return false } })
        #expect(
            phases.take() == [
                "g1 waiting", "g1 cancelled(supersededByPolicy)", "g2 waiting", "g2 cancelled(supersededByPolicy)",
                "g3 waiting", "g3 running", "g3 finished",
                "g4 waiting", "g4 running", "g4 cancelled(identityChanged)", "g5 running", "g5 finished",
            ])
        let counters = try registry.counters
        #expect(counters.coalesced == 2)
        #expect(counters.failed == 0)
        h.finish()
    }

    /// 8. Removing a slot cancels its tasks; declaring it again starts them, once-tasks included.
    @Test func removingASlotCancelsItsTasksAndRedeclaringStartsThemAgain() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let phases = PhaseRecorder(registry, "detail")
        func appear() throws {
            try registry.task("detail", id: 42) { context in
                log.add("load g\(context.generation)")
                try await context.clock.sleep(for: .seconds(10))
                log.add("loaded")
            }
            try registry.task("detail", name: "once") { _ in log.add("once") }
        }
        try appear()
        loop.advance(ms: 100)
        try registry.remove("detail")
        #expect(try !registry.contains("detail"))
        loop.advance(ms: 100)
        #expect(log.take() == ["load g1", "once"])
        try appear()
        loop.run()
        #expect(log.take() == ["load g1", "once"], "a new slot lifetime: generations restart, once runs again")
        #expect(phases.take() == ["g1 running", "g1 cancelled(removed)", "g1 running"])
        h.finish()
        #expect(phases.take() == ["g1 cancelled(registryShutDown)"])
    }
}
