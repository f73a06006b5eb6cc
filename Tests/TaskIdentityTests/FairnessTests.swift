import Testing
import UVLoop

@testable import TaskIdentity

/// `ConcurrencyLimit(fairness: .roundRobin(by:))`: the queue serves groups of keys in turn, each
/// group's generations in their own order. In virtual time.
@Suite("Round-robin fairness: each group of keys in turn")
struct FairnessTests {
    /// Keys are "tenant/name"; the group is the tenant.
    static let byTenant = ConcurrencyLimit.Fairness.roundRobin { (key: String) in key.prefix { $0 != "/" } }

    static func declare(
        _ registry: TaskRegistry<String>, _ key: String, id: Int = 1, limit: ConcurrencyLimit, log: EventLog
    )
        throws
    {
        try registry.task(key, id: id, limit: limit) { context in
            log.add("\(key)#\(id)")
            try await context.clock.sleep(for: .milliseconds(10))
        }
    }

    /// A busy tenant queues ten runs, then a quiet one queues one: with fairness the quiet
    /// tenant's run starts second, before the busy tenant's second; without, eleventh.
    @Test(arguments: [true, false])
    func aQuietTenantIsServedBeforeABusyTenantsTenth(fair: Bool) throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1, fairness: fair ? Self.byTenant : nil)
        try Self.declare(registry, "other/first", limit: limit, log: log)
        loop.run()
        for index in 0..<10 { try Self.declare(registry, "busy/\(index)", limit: limit, log: log) }
        loop.run()
        try Self.declare(registry, "quiet/0", limit: limit, log: log)
        loop.run()
        loop.advance(ms: 200)
        let order = log.take()
        #expect(order.count == 12)
        let quiet = order.firstIndex(of: "quiet/0#1")
        #expect(quiet == (fair ? 2 : 11), "\(order)")
        // Each group's runs in their own order.
        #expect(order.filter { $0.hasPrefix("busy/") } == (0..<10).map { "busy/\($0)#1" })
        h.finish()
    }

    /// Three groups queue runs together: they start in turns, one of each group.
    @Test func groupsAreServedInTurns() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1, fairness: Self.byTenant)
        try Self.declare(registry, "z/hold", limit: limit, log: log)
        loop.run()
        for key in ["a/1", "a/2", "a/3", "b/1", "b/2", "c/1"] {
            try Self.declare(registry, key, limit: limit, log: log)
        }
        loop.run()
        // a/2's newer identity replaces its queued one and joins a's queue last.
        try Self.declare(registry, "a/2", id: 2, limit: limit, log: log)
        loop.run()
        loop.advance(ms: 100)
        #expect(log.take() == ["z/hold#1", "a/1#1", "b/1#1", "c/1#1", "a/3#1", "b/2#1", "a/2#2"])
        #expect(try registry.counters.coalesced == 1)
        h.finish()
    }

    /// A full fair queue sheds the generation that has waited longest, over every group.
    @Test func aFullFairQueueShedsTheOldestOfAnyGroup() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let limit = try ConcurrencyLimit(maxRunning: 1, maxQueued: 2, fairness: Self.byTenant)
        try Self.declare(registry, "z/hold", limit: limit, log: log)
        loop.run()
        try Self.declare(registry, "b/1", limit: limit, log: log)
        loop.advance(ms: 1)
        try Self.declare(registry, "a/1", limit: limit, log: log)
        loop.advance(ms: 1)
        try Self.declare(registry, "a/2", limit: limit, log: log)
        loop.run()
        #expect(try registry.phase(of: "b/1")?.description == "cancelled(shed)")
        #expect(try registry.limitState(of: limit).queued == 2)
        loop.advance(ms: 100)
        #expect(log.take() == ["z/hold#1", "a/1#1", "a/2#1"])
        h.finish()
    }
}
