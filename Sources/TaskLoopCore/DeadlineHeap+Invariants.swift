extension DeadlineHeap {
    /// Checks the heap's invariants, in builds with `-DTASKIDENTITY_INTERNAL_CHECKS` only
    /// (elsewhere an empty body the optimizer removes): every node knows its index, and no
    /// node precedes its parent in (deadline, sequence) order. O(n).
    ///
    /// Called after every mutating operation; traps with the heap's state printed.
    @inline(__always)
    @inlinable
    package func checkInvariants() {
        #if TASKIDENTITY_INTERNAL_CHECKS
            func state() -> String {
                storage.enumerated().map {
                    "[\($0.offset)] index=\($0.element.heapIndex) deadline=\($0.element.deadline) sequence=\($0.element.sequence)"
                }
                .joined(separator: ", ")
            }
            for (index, node) in storage.enumerated() {
                precondition(
                    node.heapIndex == index,
                    "BUG DETECTED: DeadlineHeap node at \(index) has index \(node.heapIndex): \(state())")
                if index > 0 {
                    let parent = (index - 1) / 2
                    precondition(
                        !Self.precedes(node, storage[parent]),
                        "BUG DETECTED: DeadlineHeap node at \(index) precedes its parent at \(parent): \(state())")
                }
            }
        #endif
    }
}
