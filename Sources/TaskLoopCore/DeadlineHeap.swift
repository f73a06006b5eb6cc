/// Something kept in a `DeadlineHeap`: ordered by deadline, equal deadlines by sequence (the
/// order they were scheduled in), and knowing its own index so that removal needs no search.
@usableFromInline
package protocol DeadlineHeapNode: AnyObject {
    var deadline: UInt64 { get }
    var sequence: UInt64 { get }
    /// The node's index in its heap, or -1 when it is in none.
    var heapIndex: Int { get set }
}

/// A binary min-heap of nodes by (deadline, sequence): insert, remove and pop in O(log n),
/// allocation-free once grown. Used for the test loop's virtual timers and the loop's sleeps.
@usableFromInline
package struct DeadlineHeap<Node: DeadlineHeapNode> {
    // Internal, not private: `checkInvariants()` lives in its own file.
    @usableFromInline
    package var storage: [Node] = []

    @inlinable
    package var count: Int { storage.count }
    @inlinable
    package var first: Node? { storage.first }
    @inlinable
    package var nodes: [Node] { storage }

    @inlinable
    package static func precedes(_ a: Node, _ b: Node) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.sequence < b.sequence
    }

    @inlinable
    package mutating func insert(_ node: Node) {
        storage.append(node)
        node.heapIndex = storage.count - 1
        siftUp(storage.count - 1)
        checkInvariants()
    }

    @inlinable
    package mutating func removeFirst() {
        remove(storage[0])
    }

    @inlinable
    package mutating func remove(_ node: Node) {
        let index = node.heapIndex
        precondition(index >= 0 && index < storage.count && storage[index] === node, "BUG DETECTED: heap index")
        let last = storage.count - 1
        if index != last {
            storage.swapAt(index, last)
            storage[index].heapIndex = index
        }
        storage.removeLast()
        node.heapIndex = -1
        if index < storage.count {
            siftDown(index)
            siftUp(index)
        }
        checkInvariants()
    }

    @usableFromInline mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(storage[child], storage[parent]) else { return }
            storage.swapAt(child, parent)
            storage[child].heapIndex = child
            storage[parent].heapIndex = parent
            child = parent
        }
    }

    @usableFromInline mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < storage.count else { return }
            var smallest = left
            if left + 1 < storage.count && Self.precedes(storage[left + 1], storage[left]) { smallest = left + 1 }
            guard Self.precedes(storage[smallest], storage[parent]) else { return }
            storage.swapAt(smallest, parent)
            storage[smallest].heapIndex = smallest
            storage[parent].heapIndex = parent
            parent = smallest
        }
    }
}
