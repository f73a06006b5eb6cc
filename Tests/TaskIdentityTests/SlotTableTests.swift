import Testing
import UVLoop

@testable import TaskIdentity

/// A key whose hash is chosen by the test, so that slots share buckets on purpose.
struct CollidingKey: Hashable, Sendable, CustomStringConvertible {
    let value: Int
    let hashBits: Int
    func hash(into hasher: inout Hasher) { hasher.combine(hashBits) }
    static func == (lhs: Self, rhs: Self) -> Bool { lhs.value == rhs.value }
    var description: String { "k\(value)" }
}

/// The slot table grows and shrinks one bucket at a time; these check that every slot stays
/// reachable through every split and merge, and that a slot's tasks stay together in order.
@Suite struct SlotTableTests {
    /// Checks the table's shape: buckets in range, every record in the bucket its hash names,
    /// each slot's records adjacent, and the count right. Returns the slots' first records.
    func checkShape<Key>(_ table: SlotTable<Key>, sourceLocation: SourceLocation = #_sourceLocation) -> Int {
        #expect(table.splitIndex <= table.lowMask, sourceLocation: sourceLocation)
        #expect(table.bucketCount >= SlotTable<Key>.minimumBuckets, sourceLocation: sourceLocation)
        let stored = table.segments.reduce(0) { $0 + $1.count }
        #expect(stored == table.bucketCount, sourceLocation: sourceLocation)
        var records = 0
        var slots = 0
        for bucket in 0..<table.bucketCount {
            var seen = Set<Key>()
            var previous: TaskRecord<Key>?
            var next = table.head(of: bucket)
            while let record = next {
                #expect(table.bucket(forHash: record.key.hashValue) == bucket, sourceLocation: sourceLocation)
                if previous?.key != record.key {
                    // A slot's records are adjacent: a key seen before in this bucket is split.
                    #expect(!seen.contains(record.key), "slot \(record.key) split", sourceLocation: sourceLocation)
                    seen.insert(record.key)
                    slots += 1
                }
                records += 1
                previous = record
                next = record.nextInBucket
            }
        }
        #expect(records == table.count, sourceLocation: sourceLocation)
        return slots
    }

    @Test func everySlotIsFoundWhileTheTableGrowsAndShrinks() throws {
        let harness = RegistryHarness<Int>()
        let registry = harness.registry
        var live = Set<Int>()
        var random = SplitMix64(state: 7)
        for step in 0..<30_000 {
            let key = random.below(12_000)
            if step % 3 == 2 {
                try registry.remove(key)
                live.remove(key)
            } else {
                try registry.task(key, id: step, debounce: .seconds(60)) { _ in }
                live.insert(key)
            }
        }
        #expect(checkShape(registry.slots) == live.count)
        #expect(try registry.counters.liveSlots == live.count)
        for key in 0..<12_000 { #expect(try registry.contains(key) == live.contains(key), "key \(key)") }
        let grownBuckets = registry.slots.bucketCount
        #expect(grownBuckets >= live.count)
        // Removing nearly every slot merges buckets back, one removal at a time.
        for key in live.dropFirst(10) { try registry.remove(key) }
        #expect(checkShape(registry.slots) == 10)
        #expect(registry.slots.bucketCount < 64)
        for key in live.prefix(10) { #expect(try registry.contains(key)) }
        harness.finish()
    }

    @Test func aSlotsTasksStayTogetherInOrderThroughSplits() throws {
        let harness = RegistryHarness<CollidingKey>()
        let registry = harness.registry
        // Four hash values for 400 slots: long chains, split as the table grows past them.
        let keys = (0..<400).map { CollidingKey(value: $0, hashBits: $0 % 4) }
        for key in keys {
            try registry.task(key, id: 1, debounce: .seconds(60)) { _ in }
        }
        for key in keys where key.value % 5 == 0 {
            try registry.task(key, name: "second", id: 1, debounce: .seconds(60)) { _ in }
            try registry.task(key, name: "third", id: 1, debounce: .seconds(60)) { _ in }
        }
        #expect(checkShape(registry.slots) == 400)
        #expect(registry.slots.count == 400 + 80 * 2)
        for key in keys where key.value % 5 == 0 {
            var names: [TaskName] = []
            var next = registry.slots.first(for: key)
            while let record = next, record.key == key {
                names.append(record.name)
                next = record.nextInBucket
            }
            #expect(names == [.main, "second", "third"], "slot \(key)")
            #expect(try registry.generation(of: key, name: "third") == 1)
        }
        // Removing a slot in the middle of a chain takes all its tasks and only them.
        try registry.remove(keys[5])
        #expect(try registry.phase(of: keys[5], name: "second") == nil)
        #expect(try registry.generation(of: keys[10], name: "second") == 1)
        #expect(try registry.generation(of: keys[1]) == 1)
        #expect(checkShape(registry.slots) == 399)
        harness.finish()
    }

    @Test func aRemovedSlotKeepsNoneOfItsBucket() throws {
        let harness = RegistryHarness<CollidingKey>()
        let registry = harness.registry
        let keys = (0..<3).map { CollidingKey(value: $0, hashBits: 0) }
        for key in keys { try registry.task(key, id: 1, debounce: .seconds(60)) { _ in } }
        let removed = try #require(registry.slots.first(for: keys[1]))
        try registry.remove(keys[1])
        // Its chain pointer is cut: a record whose runs outlive its slot must not hold the rest.
        #expect(removed.nextInBucket == nil)
        #expect(try registry.contains(keys[0]) && registry.contains(keys[2]))
        harness.finish()
    }

    /// A look-up walks a bucket's chain unretained (`first(inBucket:key:tag:)`, `record(for:name:)`)
    /// and hands back an owned reference: deep in a chain of equal hashes, every slot and task
    /// is found, and a record found stays valid after its slot leaves the table. (The address
    /// sanitizer run of the suite catches a record released one time too many.)
    @Test func aLookUpDeepInAChainReturnsARecordThatOutlivesItsSlot() throws {
        let harness = RegistryHarness<CollidingKey>()
        let registry = harness.registry
        let keys = (0..<64).map { CollidingKey(value: $0, hashBits: 0) }  // one chain
        for key in keys {
            try registry.task(key, id: 1, debounce: .seconds(60)) { _ in }
            try registry.task(key, name: "second", id: 2, debounce: .seconds(60)) { _ in }
        }
        var found: [TaskRecord<CollidingKey>] = []
        for key in keys.reversed() {
            let second = try #require(registry.record(key, "second"), "slot \(key)")
            #expect(second.key == key && second.name == "second")
            found.append(second)
        }
        for key in keys where key.value % 2 == 0 { try registry.remove(key) }
        for record in found {
            // Held here only: the table let go of the removed ones.
            #expect(record.key.hashBits == 0 && record.name == "second")
            #expect((registry.record(record.key, "second") != nil) == (record.key.value % 2 == 1))
        }
        #expect(checkShape(registry.slots) == 32)
        found = []
        harness.finish()
    }
}
