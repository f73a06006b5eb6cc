import Testing

@testable import TaskIdentity

/// A record's stored result and its rare state share one box (`TaskExtras`, or its subclass
/// `RareTaskState` once a rare option or a failure needs one).
@Suite("A record's extras: the stored result kept when the rare state is made")
struct TaskExtrasTests {
    struct Failure: Error {}

    @Test func aResultStoredBeforeAFailureIsStillThereAfterIt() throws {
        let h = RegistryHarness<String>()
        let (loop, registry) = (h.loop, h.registry)
        try registry.task("a", id: 1) { context in context.commit(result: "first") }
        loop.run()
        #expect(try registry.result(of: "a", as: String.self) == "first")
        #expect(try #require(registry.record("a", .main)).rare == nil, "a result alone makes no rare state")
        try registry.task("a", id: 2) { _ in throw Failure() }
        loop.run()
        #expect(try registry.phase(of: "a")?.description.hasPrefix("failed") == true)
        #expect(try #require(registry.record("a", .main)).rare?.failure is Failure)
        #expect(try registry.result(of: "a", as: String.self) == "first", "the result moved into the rare state")
        h.finish()
    }
}
