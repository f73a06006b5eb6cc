/// Work ordered by task priority: the highest non-empty band runs first, FIFO within a band.
///
/// Four bands are enough to honour Swift's named priorities (`.high`/`.userInitiated` and
/// above, `.medium` and unspecified, `.low`/`.utility`, `.background`); finer ordering inside a
/// band would cost a heap operation per job.
@usableFromInline
package struct PriorityWorkQueue {
    /// One band: FIFO.
    @usableFromInline
    package typealias WorkRing = RingBuffer<LoopWork>

    // Internal, not private: `checkInvariants()` lives in its own file.
    @usableFromInline
    package var bands = (WorkRing(), WorkRing(), WorkRing(), WorkRing())
    @usableFromInline
    package var count = 0

    @inlinable
    package init() {}

    @inlinable
    package var isEmpty: Bool { count == 0 }

    /// The band of a raw `JobPriority` value (0 means unspecified and counts as medium).
    @inline(__always)
    @inlinable
    package static func band(of priority: UInt8) -> Int {
        if priority >= TaskPriority.high.rawValue { return 0 }
        if priority >= TaskPriority.medium.rawValue || priority == 0 { return 1 }
        if priority >= TaskPriority.low.rawValue { return 2 }
        return 3
    }

    @inline(__always)
    @inlinable
    package mutating func append(_ work: LoopWork, priority: UInt8) {
        switch Self.band(of: priority) {
        case 0: bands.0.append(work)
        case 1: bands.1.append(work)
        case 2: bands.2.append(work)
        default: bands.3.append(work)
        }
        count &+= 1
        checkInvariants()
    }

    @inline(__always)
    @inlinable
    package mutating func popFirst() -> LoopWork? {
        guard count > 0 else { return nil }
        count &-= 1
        defer { checkInvariants() }
        if !bands.0.isEmpty { return bands.0.popFirst() }
        if !bands.1.isEmpty { return bands.1.popFirst() }
        if !bands.2.isEmpty { return bands.2.popFirst() }
        return bands.3.popFirst()
    }
}
