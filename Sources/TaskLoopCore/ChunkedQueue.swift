/// A FIFO queue kept in fixed-size chunks, so that it never stops to grow: appending allocates
/// at most one chunk, and no element is ever moved. A `RingBuffer` doubles and copies every
/// element when it fills, which at millions of entries (a deadline queue of a registry with a
/// waiting task per slot) stopped the loop for tens of milliseconds. Shared with the registry
/// module with `package` access, `@inlinable` so that it is specialized for its element.
///
/// One emptied chunk is kept for reuse, so a queue that holds about the same number of
/// elements allocates nothing once warm.
@usableFromInline
package struct ChunkedQueue<Element> {
    /// Elements a chunk holds.
    @usableFromInline static var chunkCapacity: Int { 1_024 }

    /// The chunk the oldest element is in; its elements before `headIndex` are taken.
    @usableFromInline var head: ContiguousArray<Element?> = []
    @usableFromInline var headIndex = 0
    /// Full chunks between `head` and `tail`, oldest first.
    @usableFromInline var middle = RingBuffer<ContiguousArray<Element?>>()
    /// The chunk new elements go to, unless the queue is down to `head`.
    @usableFromInline var tail: ContiguousArray<Element?> = []
    /// An emptied chunk, its storage kept for the next one.
    @usableFromInline var spare: ContiguousArray<Element?> = []
    @usableFromInline var storedCount = 0

    /// An empty queue; storage is allocated on the first append.
    @inlinable
    package init() {}

    /// The number of elements. O(1).
    @inlinable
    package var count: Int { storedCount }

    /// Whether the queue holds nothing. O(1).
    @inlinable
    package var isEmpty: Bool { storedCount == 0 }

    /// `body` applied to the oldest element where it lies, borrowed, not copied: `nil` when the
    /// queue is empty. O(1). `body` must not change the queue.
    @inlinable
    package func withFirst<Result>(_ body: (borrowing Element?) -> Result) -> Result {
        guard storedCount > 0 else { return body(nil) }
        return body(head[headIndex])
    }

    /// Appends at the back. O(1): at most one chunk allocated, nothing moved.
    @inlinable
    package mutating func append(_ element: Element) {
        if storedCount == 0 {
            // Empty: the element becomes the head, in the head chunk (reused once used up).
            if head.count == Self.chunkCapacity { head.removeAll(keepingCapacity: true) }
            if head.capacity == 0 { head = takeSpare() }
            headIndex = head.count
            head.append(element)
        } else if head.count < Self.chunkCapacity && middle.isEmpty && tail.isEmpty {
            // Only a head with room holds elements: it takes this one too.
            head.append(element)
        } else {
            if tail.count == Self.chunkCapacity {
                middle.append(tail)
                tail = takeSpare()
            } else if tail.capacity == 0 {
                tail = takeSpare()
            }
            tail.append(element)
        }
        storedCount &+= 1
    }

    /// Removes and returns the oldest element. O(1).
    @inlinable
    package mutating func popFirst() -> Element? {
        guard storedCount > 0 else { return nil }
        let element = head[headIndex].take()
        headIndex &+= 1
        storedCount &-= 1
        if headIndex == head.count && storedCount > 0 { advanceHead() }
        return element
    }

    /// The head chunk is used up and elements remain (so the head was full): the next chunk
    /// becomes the head, and the used one the spare if there is none.
    @inlinable
    mutating func advanceHead() {
        var next: ContiguousArray<Element?> = []
        if let chunk = middle.popFirst() { next = chunk } else { swap(&next, &tail) }
        swap(&head, &next)
        headIndex = 0
        if spare.capacity == 0 {
            next.removeAll(keepingCapacity: true)
            spare = next
        }
    }

    /// The spare chunk's storage (or a new chunk's), empty, with room for a chunk.
    @inlinable
    mutating func takeSpare() -> ContiguousArray<Element?> {
        var chunk: ContiguousArray<Element?> = []
        swap(&chunk, &spare)
        if chunk.capacity < Self.chunkCapacity { chunk.reserveCapacity(Self.chunkCapacity) }
        return chunk
    }
}
