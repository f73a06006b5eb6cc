import TaskIdentity
import Testing
import UVLoop

/// The example of the documentation article "Testing with TestLoop"
/// (Sources/TaskIdentity/TaskIdentity.docc/TestingWithTestLoop.md), compiled and run as it is
/// printed there. Keep the two in step.
@Suite("DocC article examples")
struct DocCExampleTests {
    @Test func aDebouncedSearchRunsOnceForTheLastQuery() throws {
        let loop = TestLoop()  // this thread is now the loop's thread
        let registry = TaskRegistry<String>(loop: loop)
        let searches = LoopBound([String](), loop: loop)  // what the backend was asked
        let shown = LoopBound([String](), loop: loop)  // what the screen shows

        // Every phase of the session's task, as the registry publishes them.
        let phases = LoopBound([String](), loop: loop)
        let updates = registry.phaseUpdates(of: "session")
        let observer = Task(executorPreference: loop) {
            for await update in updates { phases.value.append(update.description) }
        }

        func queryChanged(_ query: String) throws {
            try registry.task("session", id: query, debounce: .milliseconds(250)) { context in
                searches.value.append(query)
                try await context.clock.sleep(for: .milliseconds(40))  // the backend's latency
                context.commit { shown.value = ["results for \(query)"] }
            }
        }

        // Typing "s", "sw", "swi", 100 ms apart.
        try queryChanged("s")
        loop.advance(by: .milliseconds(100))
        try queryChanged("sw")
        loop.advance(by: .milliseconds(100))
        try queryChanged("swi")

        // The window closes 250 ms after the last change, not before.
        loop.advance(by: .milliseconds(249))
        #expect(searches.value.isEmpty)
        loop.advance(by: .milliseconds(1))
        #expect(searches.value == ["swi"])
        #expect(shown.value.isEmpty)

        // The search takes 40 ms of virtual time; then its result lands.
        loop.advance(by: .milliseconds(40))
        #expect(shown.value == ["results for swi"])
        #expect(try registry.counters.coalesced == 2)  // "s" and "sw" never ran
        #expect(
            phases.value == [
                "g0 idle",
                "g1 waiting", "g1 cancelled(supersededByPolicy)",
                "g2 waiting", "g2 cancelled(supersededByPolicy)",
                "g3 waiting", "g3 running", "g3 finished",
            ])

        // Shut down without awaiting: nothing runs on a test loop while a test awaits.
        registry.startShutdown()
        loop.run()
        loop.shutdown()
        #expect(try registry.counters.runningActions == 0)
        #expect(loop.openTimerCount == 0)
        observer.cancel()
    }
}
