import Testing
import UVLoop

@testable import TaskIdentity

/// A declaration from a template finds its interned options by the template's identity: a slot
/// declared from templates with other options takes each declaration's own options.
@Suite("Templates: each declaration's own options")
struct TemplateOptionsTests {
    @Test func aSlotSwitchingTemplatesTakesEachTemplatesOptions() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let now = try TaskTemplate<String> { key, context in log.add("now \(key) \(context.id ?? "")") }
        let debounced = try TaskTemplate<String>(debounce: .seconds(1)) { key, context in
            log.add("debounced \(key) \(context.id ?? "")")
        }
        let alsoNow = try TaskTemplate<String> { key, context in log.add("also \(key) \(context.id ?? "")") }
        try registry.task("k", id: 1, template: now)
        loop.run()
        #expect(log.take() == ["now k 1"])
        try registry.task("k", id: 2, template: debounced)
        loop.run()
        #expect(log.take() == [])  // the debounced template's window, not the first one's options
        #expect(try registry.phase(of: "k")?.description == "waiting")
        loop.advance(by: .seconds(1))
        #expect(log.take() == ["debounced k 2"])
        try registry.task("k", id: 3, template: now)
        loop.run()
        #expect(log.take() == ["now k 3"])  // no debounce again
        let internedByNow = try #require(registry.record("k", .main)?.options)
        // Equal options from another template: the same interned options, compared by value.
        try registry.task("k", id: 4, template: alsoNow)
        loop.run()
        #expect(log.take() == ["also k 4"])
        #expect(registry.record("k", .main)?.options === internedByNow)
        h.finish()
    }
}
