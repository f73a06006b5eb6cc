import Testing
import UVLoop

@testable import TaskIdentity

@Suite("Stored identities: integers by their bits, everything else as values")
struct StoredIdentityTests {
    @Test func integersRoundTripWithTheirTypes() {
        let values: [any Hashable & Sendable] = [
            -1, Int.min, Int.max, UInt64.max, Int64.min, UInt.max, Int32.min, Int32(-7), UInt32.max,
        ]
        for value in values {
            let stored = store(value)
            guard case .integer = stored else {
                Issue.record("\(type(of: value)) \(value) was not stored as an integer")
                continue
            }
            let back = stored.declaredValue
            #expect(back.map { identitiesEqual($0, value) } == true, "\(type(of: value)) \(value)")
            #expect(back.map { type(of: $0) == type(of: value) } == true)
        }
    }

    @Test func equalityFollowsTypeAndValue() {
        #expect(StoredIdentity(5).isEqual(to: StoredIdentity(5)))
        #expect(!StoredIdentity(5).isEqual(to: StoredIdentity(6)))
        #expect(!StoredIdentity(5).isEqual(to: StoredIdentity(Int64(5))), "same bits, another type")
        #expect(!StoredIdentity(-1).isEqual(to: StoredIdentity(UInt64.max)), "same bits, another type")
        #expect(StoredIdentity("a").isEqual(to: StoredIdentity("a")))
        #expect(!StoredIdentity("5").isEqual(to: StoredIdentity(5)))
        #expect(StoredIdentity().isEqual(to: StoredIdentity()))
        #expect(!StoredIdentity().isEqual(to: StoredIdentity(0)))
        #expect(StoredIdentity(1, "x").isEqual(to: StoredIdentity(1, "x")))
        #expect(!StoredIdentity(1, "x").isEqual(to: StoredIdentity(1, "y")))
        #expect(StoredIdentity(1.5).isEqual(to: StoredIdentity(1.5)), "other types keep their own ==")
        #expect(StoredIdentity(0.0).isEqual(to: StoredIdentity(-0.0)), "0.0 == -0.0 although their bits differ")
    }

    @Test func theRegistryRestartsOnATypeChangeAndHandsTheDeclaredValueToTheRun() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let work = try TaskTemplate<String>.synchronous { _, context in
            log.add("\(type(of: context.id!)) \(context.id!) \(context.id(as: Int32.self).map(String.init) ?? "-")")
        }
        try registry.task("a", id: Int32(-3), template: work)
        loop.run()
        try registry.task("a", id: Int32(-3), template: work)  // equal: nothing
        loop.run()
        try registry.task("a", id: Int64(-3), template: work)  // same value, another type: restart
        loop.run()
        #expect(log.take() == ["Int32 -3 -3", "Int64 -3 -"])
        #expect(registry.counters.unchanged == 1 && registry.counters.started == 2)
        h.finish()
    }

    private func store(_ value: any Hashable & Sendable) -> StoredIdentity {
        func open<Value: Hashable & Sendable>(_ value: Value) -> StoredIdentity { StoredIdentity(value) }
        return open(value)
    }
}
