import Testing
import UVLoop

@testable import TaskIdentity

/// What a run's `context.id` reads for each way of declaring it, and which redeclarations
/// count as a change. The registry stores an identity as a plain existential (`NoIdentity` for
/// none), so these pin that `context.id` still reads `nil` for none, and only for none.
@Suite("TaskContext.id: what a run sees of its identity")
struct ContextIdentityTests {
    private func describe(_ context: TaskContext) -> String {
        guard let id = context.id else { return "nil g\(context.generation)" }
        return "\(type(of: id)) \(id) g\(context.generation)"
    }

    @Test func noIdReadsNilAndRedeclaringWithoutAnIdChangesNothing() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("k") { context in log.add(self.describe(context)) }
        loop.run()
        #expect(log.take() == ["nil g1"])
        try registry.task("k") { context in log.add(self.describe(context)) }
        loop.run()
        #expect(log.take() == [])  // the same (absent) identity: no new run
        #expect(try registry.generation(of: "k") == 1)
        h.finish()
    }

    @Test func anIdAndNoIdAreDifferentIdentitiesBothWays() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("k", id: 5) { context in
            log.add("\(self.describe(context)) as Int \(context.id(as: Int.self).map(String.init) ?? "none")")
        }
        loop.run()
        try registry.task("k") { context in
            log.add("\(self.describe(context)) as Int \(context.id(as: Int.self).map(String.init) ?? "none")")
        }
        loop.run()
        try registry.task("k", id: 5) { context in log.add(self.describe(context)) }
        loop.run()
        #expect(log.take() == ["Int 5 g1 as Int 5", "nil g2 as Int none", "Int 5 g3"])
        h.finish()
    }

    /// An optional id that is `nil` is a declared value, not the absence of one: the action
    /// sees it wrapped, and it differs from a declaration without an id.
    @Test func aNilOptionalIdIsAValueNotTheAbsenceOfOne() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("k") { context in log.add(self.describe(context)) }
        loop.run()
        let none: Int? = nil
        try registry.task("k", id: none) { context in
            log.add("\(self.describe(context)) as Int \(context.id(as: Int.self).map(String.init) ?? "none")")
        }
        loop.run()
        #expect(log.take() == ["nil g1", "Optional<Int> nil g2 as Int none"])
        h.finish()
    }

    @Test func severalValuesReadAsOneCompoundIdentity() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        try registry.task("k", id: "a", 1) { context in
            let compound = context.id(as: CompoundIdentity<String, Int>.self)
            log.add("\(compound?.values.0 ?? "?") \(compound?.values.1 ?? -1) g\(context.generation)")
        }
        loop.run()
        try registry.task("k", id: "a", 1) { _ in log.add("unexpected") }
        loop.run()
        #expect(log.take() == ["a 1 g1"])  // equal compound identities: one run
        h.finish()
    }
}
