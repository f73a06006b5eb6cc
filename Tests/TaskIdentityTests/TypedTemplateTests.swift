import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

/// Typed template identities and buffered phase streams.
@Suite("Typed templates and phase buffering")
struct TypedTemplateTests {
    @Test func aTypedTemplateGivesItsActionTheIdentityTyped() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let search = try TypedTaskTemplate<String, String>(debounce: .milliseconds(10)) { key, query, _ in
            log.add("\(key): \(query)")
        }
        let presence = try TypedTaskTemplate<String, Int>.synchronous(name: "presence") { key, status, _ in
            log.add("\(key) status \(status)")
        }
        try registry.task("u", id: "sw", template: search)
        try registry.task("u", id: "swift", template: search)
        try registry.task("u", id: 3, template: presence)
        loop.advance(ms: 20)
        #expect(log.take() == ["u status 3", "u: swift"])
        h.finish()
    }

    @Test func aPhaseStreamBufferingTheNewestKeepsOnlyTheLatest() async throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        let stream = registry.phaseUpdates(of: "a", bufferingPolicy: .bufferingNewest(1))
        for id in 1...5 {
            try registry.task("a", id: id) { _ in }
            loop.run()
        }
        registry.startShutdown()
        loop.run()
        var seen: [String] = []
        for await update in stream { seen.append(update.description) }
        let expected: [String] = ["g5 finished"]
        #expect(seen == expected, "only the newest was kept")
        loop.shutdown()
    }
}
