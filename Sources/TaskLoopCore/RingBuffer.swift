/// A growable FIFO ring buffer. Popping and pushing allocate nothing once the buffer has grown
/// to the queue's high-water mark. Shared with the registry module with `package` access,
/// `@inlinable`: unspecialized it costs a generic-metadata lookup per call (profiled: 40% of a
/// debounced change).

@usableFromInline
package struct RingBuffer<Element> {
    // @inlinable so that other modules (the registry's deadline queues) get it specialized
    // for their element type instead of copying elements through value witnesses.
    @usableFromInline var slots: ContiguousArray<Element?> = []
    @usableFromInline var head = 0
    @usableFromInline var storedCount = 0

    /// An empty buffer; storage is allocated on the first append.
    @inlinable
    package init() {}

    /// The number of elements. O(1).
    @inlinable
    package var count: Int { storedCount }

    /// Whether the buffer holds nothing. O(1).
    @inlinable
    package var isEmpty: Bool { storedCount == 0 }

    /// The oldest element, if any. O(1).
    @inlinable
    package var first: Element? { storedCount == 0 ? nil : slots[head] }

    /// `body` applied to the oldest element's slot where it lies, borrowed, not copied: `nil`
    /// when the buffer is empty. O(1).
    ///
    /// Reading a field this way, `buffer.withFirst { $0?.deadline }`, loads just that field;
    /// `first?.deadline` returns a copy of the whole element first (the optimizer keeps that
    /// copy in the registry's generic deadline queues), retaining and releasing every reference
    /// in it. `body` must not change the buffer.
    @inlinable
    package func withFirst<Result>(_ body: (borrowing Element?) -> Result) -> Result {
        guard storedCount > 0 else { return body(nil) }
        return body(slots[head])
    }

    /// Appends at the back. Amortised O(1).
    @inlinable
    package mutating func append(_ element: Element) {
        if storedCount == slots.count { grow() }
        slots[(head &+ storedCount) & (slots.count &- 1)] = element
        storedCount &+= 1
        checkInvariants()
    }

    /// Removes and returns the oldest element. O(1).
    @inlinable
    package mutating func popFirst() -> Element? {
        guard storedCount > 0 else { return nil }
        let element = slots[head].take()
        head = (head &+ 1) & (slots.count &- 1)
        storedCount &-= 1
        checkInvariants()
        return element
    }

    @inlinable
    mutating func grow() {
        // Capacity stays a power of two so that wrapping is a mask.
        let newCapacity = Swift.max(16, slots.count * 2)
        var newSlots = ContiguousArray<Element?>(repeating: nil, count: newCapacity)
        for offset in 0..<storedCount {
            newSlots[offset] = slots[(head + offset) & (slots.count - 1)].take()
        }
        slots = newSlots
        head = 0
        checkInvariants()
    }
}
