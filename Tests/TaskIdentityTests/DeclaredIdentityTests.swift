import Testing

@testable import TaskIdentity

/// A single identity declared through a template keeps its type (`TypedIdentity`), while other
/// declarations erase it (`ErasedIdentity`): both must follow the same rule, equal when of
/// the same type and `==`, whichever way the record's identity was stored.
@Suite("Declared identities: typed and erased declarations agree")
struct DeclaredIdentityTests {
    /// One slot declared through every path in turn, each declaration either equal to the
    /// last (unchanged) or not (a new generation).
    @Test func typedAndErasedDeclarationsCompareAlike() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let template = try TaskTemplate<String> { _, context in
            log.add(context.id(as: Int.self).map(String.init) ?? "?")
        }
        try registry.task("a", id: 1, template: template)  // typed, new record
        loop.run()
        try registry.task("a", id: 1, template: template)  // typed, equal: unchanged
        try registry.task("a", id: UInt64(1), template: template)  // typed, another type: new
        loop.run()
        try registry.task("a", id: UInt64(1), 2, template: template)  // erased compound: new
        loop.run()
        try registry.task("a", id: UInt64(1), 2, template: template)  // erased, equal: unchanged
        try registry.task("a", id: 1, template: template)  // typed against a compound: new
        loop.run()
        try registry.task("a", id: 1) { _ in log.add("closure") }  // erased, equal
        loop.run()
        let counters = try registry.counters
        #expect(counters.declared == 7)
        #expect(counters.unchanged == 3, "the equal declarations, typed and erased")
        #expect(counters.started == 4)
        #expect(log.take() == ["1", "?", "?", "1"])
        h.finish()
    }

    @Test func typedEqualsOpensOnlyTheStoredSide() {
        #expect(TypedIdentity(1).equals(1))
        #expect(!TypedIdentity(1).equals(UInt64(1)), "another type is another identity")
        #expect(!TypedIdentity("1").equals(1))
        #expect(!TypedIdentity(1).equals(NoIdentity()))
        #expect(ErasedIdentity(CompoundIdentity(1, "a")).equals(CompoundIdentity(1, "a")))
        #expect(!ErasedIdentity(CompoundIdentity(1, "a")).equals(1))
    }
}
