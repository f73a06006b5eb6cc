/// The registry's slot table: every task record, found by its slot's key and its name.
///
/// A hash table that grows and shrinks one bucket at a time (linear hashing): a declaration
/// splits at most one bucket, and a removal merges back one bucket per record it removes. A Swift `Dictionary` rehashes
/// every entry when it doubles, which stopped the loop for 0.3 s at 800k slots and 3 s at 3.1M
/// (docs/SCALING.md, before this table). Buckets live in segments of a fixed size, so growing
/// never copies more than the small directory of segments, and a new segment is reserved, not
/// filled.
///
/// A bucket's chain runs through its records (`TaskRecord.nextInBucket`), and a slot's records
/// are adjacent in it, first declared first: a task costs one pointer in its record and about
/// one bucket pointer, and the same pointer that chains the bucket lists the slot's tasks.
///
/// Each record keeps the low 32 bits of its key's hash (`AnyTaskRecord.slotHash`), in padding
/// of its first cache line: a look-up compares it before the key, so a record of another slot
/// in the chain costs one cache line, not two (the key lies at the record's end), and a split
/// reads it instead of hashing keys again. Buckets are chosen by those 32 bits, enough for 2^32
/// buckets.
///
/// Loop thread only: it belongs to its registry, whose slots are loop-confined.
@usableFromInline
struct SlotTable<Key: Hashable & Sendable> {
    @usableFromInline typealias Record = TaskRecord<Key>

    /// A segment holds `1 << segmentShift` buckets (32 KiB of pointers).
    @inlinable static var segmentShift: Int { SlotTableShape.segmentShift }
    @inlinable static var segmentMask: Int { SlotTableShape.segmentMask }
    /// The fewest buckets the table keeps, a power of two.
    @inlinable static var minimumBuckets: Int { SlotTableShape.minimumBuckets }

    /// The buckets, segment by segment; only the last segment may be short.
    @usableFromInline var segments: ContiguousArray<ContiguousArray<Record?>>
    /// Buckets at the start of this round, less one: a hash's bucket is `hash & lowMask`, or
    /// `hash & (lowMask << 1 | 1)` when that bucket has already been split this round.
    @usableFromInline var lowMask: Int
    /// The next bucket to split; the buckets below it have been split this round.
    @usableFromInline var splitIndex: Int
    /// Records in the table (a slot's tasks count one each).
    @usableFromInline var count: Int

    @inlinable
    init() {
        segments = [ContiguousArray(repeating: nil, count: Self.minimumBuckets)]
        lowMask = Self.minimumBuckets - 1
        splitIndex = 0
        count = 0
    }

    /// Buckets in use: `lowMask + 1` at the start of a round, one more per split.
    @inlinable var bucketCount: Int { lowMask &+ 1 &+ splitIndex }

    @inlinable
    func bucket(forHash hash: Int) -> Int {
        let low = hash & lowMask
        return low < splitIndex ? hash & (lowMask << 1 | 1) : low
    }

    @inlinable
    func head(of bucket: Int) -> Record? {
        segments[bucket >> SlotTableShape.segmentShift][bucket & SlotTableShape.segmentMask]
    }

    @inlinable
    mutating func setHead(of bucket: Int, to record: Record?) {
        segments[bucket >> SlotTableShape.segmentShift][bucket & SlotTableShape.segmentMask] = record
    }

    /// The first record of slot `key` (its other records follow it through `nextInBucket`
    /// while their key is `key`), or `nil`.
    @inlinable
    func first(for key: Key) -> Record? {
        let hash = key.hashValue
        return first(inBucket: bucket(forHash: hash), key: key, tag: Self.tag(hash))
    }

    /// The part of a key's hash a record keeps.
    @inlinable
    static func tag(_ hash: Int) -> UInt32 { UInt32(truncatingIfNeeded: hash) }

    /// The record of task `name` of slot `key`, or `nil`. `hash` is `key.hashValue`, for a
    /// caller that inserts the key next (`insert(_:hash:)`) and so hashes it once.
    /// Always inlined: called on the table stored in a class, a call would first retain the
    /// table's bucket array to pass it (W1 -93 and W2 -122 instructions a change).
    @inlinable @inline(__always)
    func record(for key: Key, name: TaskName, hash: Int? = nil) -> Record? {
        let hash = hash ?? key.hashValue
        let tag = Self.tag(hash)
        guard let first = first(inBucket: bucket(forHash: hash), key: key, tag: tag) else { return nil }
        if first.name == name { return first }
        // The slot's other tasks, walked unretained as in `first(inBucket:key:tag:)`.
        var current = Unmanaged.passUnretained(first)
        while let next = current._withUnsafeGuaranteedRef({ $0.nextInBucket.map(Unmanaged.passUnretained) }),
            next._withUnsafeGuaranteedRef({ $0.slotHash == tag && $0.key == key })
        {
            if next._withUnsafeGuaranteedRef({ $0.name == name }) { return next.takeUnretainedValue() }
            current = next
        }
        return nil
    }

    /// Adds `record`, whose task must not be in the table: after its slot's last record, or
    /// first in its bucket for a new slot. Then splits one bucket if the table holds more
    /// records than buckets. `hash`, when given, is the record's `key.hashValue`.
    ///
    /// - Returns: whether the record opened a new slot.
    @inlinable @discardableResult
    mutating func insert(_ record: Record, hash: Int? = nil) -> Bool {
        let hash = hash ?? record.key.hashValue
        let bucket = bucket(forHash: hash)
        let tag = Self.tag(hash)
        record.slotHash = tag
        let isNewSlot: Bool
        if var last = first(inBucket: bucket, key: record.key, tag: tag) {
            while let next = last.nextInBucket, next.slotHash == tag, next.key == record.key { last = next }
            record.nextInBucket = last.nextInBucket
            last.nextInBucket = record
            isNewSlot = false
        } else {
            record.nextInBucket = head(of: bucket)
            setHead(of: bucket, to: record)
            isNewSlot = true
        }
        count &+= 1
        if count > bucketCount { splitNextBucket() }
        return isNewSlot
    }

    /// The first record of slot `key` in `bucket` (the key's bucket), or `nil`. `tag` is
    /// `tag(key.hashValue)`.
    @inlinable
    func first(inBucket bucket: Int, key: Key, tag: UInt32) -> Record? {
        guard let head = head(of: bucket) else { return nil }
        if head.slotHash == tag && head.key == key { return head }
        // The rest of the chain is walked unretained (the table holds every record in it, and
        // nothing here releases one, provided `Key.==` does not remove slots of this registry,
        // which no hash table survives): retaining each record passed cost two calls a step.
        var current = Unmanaged.passUnretained(head)
        while let next = current._withUnsafeGuaranteedRef({ $0.nextInBucket.map(Unmanaged.passUnretained) }) {
            if next._withUnsafeGuaranteedRef({ $0.slotHash == tag && $0.key == key }) {
                return next.takeUnretainedValue()
            }
            current = next
        }
        return nil
    }

    /// Removes slot `key`: every record of it leaves the table. Returns its first record, from
    /// which the slot's records still follow one another through `nextInBucket` (the last one's
    /// is `nil`), or `nil` if there is no such slot. Then merges buckets back while the table
    /// holds fewer records than half its buckets.
    @inlinable
    mutating func removeSlot(_ key: Key) -> Record? {
        let hash = key.hashValue
        let bucket = bucket(forHash: hash)
        let tag = Self.tag(hash)
        var previous: Record?
        var next = head(of: bucket)
        while let record = next, record.slotHash != tag || record.key != key {
            previous = record
            next = record.nextInBucket
        }
        guard let first = next else { return nil }
        var last = first
        var removed = 1
        while let following = last.nextInBucket, following.slotHash == tag, following.key == key {
            last = following
            removed &+= 1
        }
        if let previous {
            previous.nextInBucket = last.nextInBucket
        } else {
            setHead(of: bucket, to: last.nextInBucket)
        }
        // The removed records may outlive their slot (their runs are ending): they must not
        // keep the rest of the bucket alive.
        last.nextInBucket = nil
        count &-= removed
        while count &* 2 < bucketCount && bucketCount > Self.minimumBuckets { mergeLastBucket() }
        return first
    }

    /// Empties the table and returns every slot's first record, in no particular order; each
    /// slot's records still follow its first through `nextInBucket` (the last one's is `nil`).
    /// For shutdown: one pass, with no bucket merged.
    @inlinable
    mutating func removeAllSlots() -> [Record] {
        var firsts: [Record] = []
        for segment in segments {
            for head in segment {
                var next = head
                while let first = next {
                    firsts.append(first)
                    var last = first
                    while let following = last.nextInBucket, following.slotHash == first.slotHash,
                        following.key == first.key
                    {
                        last = following
                    }
                    next = last.nextInBucket
                    last.nextInBucket = nil
                }
            }
        }
        self = SlotTable()
        return firsts
    }

    /// Calls `body` with every record, in no particular order; `body` must not change the table.
    /// O(n) in the records.
    func forEachRecord(_ body: (Record) -> Void) {
        for segment in segments {
            for head in segment {
                var next = head
                while let record = next {
                    next = record.nextInBucket
                    body(record)
                }
            }
        }
    }

    /// Every slot's key, in no particular order. O(n) in the records.
    func allKeys() -> [Key] {
        var keys: [Key] = []
        for segment in segments {
            for head in segment {
                var next = head
                while let record = next {
                    // A slot's records sit together: its first one is the one whose predecessor
                    // in the bucket holds another key.
                    if keys.last != record.key { keys.append(record.key) }
                    next = record.nextInBucket
                }
            }
        }
        return keys
    }

    /// Splits bucket `splitIndex` into itself and a new last bucket by one more bit of each
    /// slot's hash (about one record a declaration), keeping the order of the records that
    /// stay together. The hashes are the records' own (`slotHash`): no key is read or hashed.
    @inlinable
    mutating func splitNextBucket() {
        let source = splitIndex
        let target = bucketCount
        if target & Self.segmentMask == 0 {
            var segment = ContiguousArray<Record?>()
            segment.reserveCapacity(1 << Self.segmentShift)
            segments.append(segment)
        }
        segments[segments.count - 1].append(nil)
        let highMask = lowMask << 1 | 1
        var lists = (stay: ChainBuilder(), move: ChainBuilder())
        var next = head(of: source)
        while let record = next {
            next = record.nextInBucket
            // A slot's records share their hash, so they stay together.
            if Int(record.slotHash) & highMask != source {
                lists.move.append(record)
            } else {
                lists.stay.append(record)
            }
        }
        setHead(of: source, to: lists.stay.end())
        setHead(of: target, to: lists.move.end())
        splitIndex += 1
        if splitIndex > lowMask {
            lowMask = highMask
            splitIndex = 0
        }
    }

    /// Undoes the latest split: the last bucket's records go back after those of the bucket
    /// it was split from, and the last bucket goes.
    @inlinable
    mutating func mergeLastBucket() {
        if splitIndex == 0 {
            lowMask >>= 1
            splitIndex = lowMask + 1
        }
        splitIndex -= 1
        let target = splitIndex
        assert(segments.count - 1 == bucketCount >> Self.segmentShift, "the last bucket is in the last segment")
        let moving = segments[segments.count - 1].removeLast()
        if segments[segments.count - 1].isEmpty { segments.removeLast() }
        guard var last = head(of: target) else {
            setHead(of: target, to: moving)
            return
        }
        while let next = last.nextInBucket { last = next }
        last.nextInBucket = moving
    }

    /// A chain of records built by appending, for `splitNextBucket`.
    @usableFromInline
    struct ChainBuilder {
        @usableFromInline var first: Record?
        @usableFromInline var last: Record?

        @inlinable init() {}

        @inlinable
        mutating func append(_ record: Record) {
            if let last { last.nextInBucket = record } else { first = record }
            last = record
        }

        /// Ends the chain and returns its first record.
        @inlinable
        mutating func end() -> Record? {
            last?.nextInBucket = nil
            return first
        }
    }
}

/// The slot table's constants, outside the generic type: a bucket's look-up, specialized or
/// merged across key types, then reads them as constants instead of calling a generic getter.
/// May be used on any thread.
@usableFromInline
enum SlotTableShape {
    /// A segment holds `1 << segmentShift` buckets.
    @inlinable static var segmentShift: Int { 12 }
    /// A bucket's index within its segment.
    @inlinable static var segmentMask: Int { (1 << segmentShift) - 1 }
    /// The fewest buckets a table keeps, a power of two.
    @inlinable static var minimumBuckets: Int { 8 }
}
