extension RingBuffer {
    /// Checks the buffer's invariants, in builds with `-DTASKIDENTITY_INTERNAL_CHECKS` only
    /// (elsewhere an empty body the optimizer removes): a power-of-two capacity, head and count
    /// within it, the head and tail slots occupied and the slots just outside them empty.
    /// O(1), so that checked builds of the queue-heavy tests stay linear.
    ///
    /// Called after every mutating operation; traps with the buffer's state printed.
    @inlinable @inline(__always)
    func checkInvariants() {
        #if TASKIDENTITY_INTERNAL_CHECKS
            let capacity = slots.count
            let state = "head=\(head) count=\(storedCount) capacity=\(capacity)"
            precondition(
                capacity & (capacity &- 1) == 0, "BUG DETECTED: RingBuffer capacity is not a power of two: \(state)")
            precondition(
                storedCount >= 0 && storedCount <= capacity, "BUG DETECTED: RingBuffer count out of range: \(state)")
            precondition(
                capacity == 0 ? head == 0 : (0..<capacity).contains(head),
                "BUG DETECTED: RingBuffer head out of range: \(state)")
            guard capacity > 0 else { return }
            let mask = capacity - 1
            if storedCount > 0 {
                precondition(slots[head] != nil, "BUG DETECTED: RingBuffer head slot is empty: \(state)")
                let tail = (head + storedCount - 1) & mask
                precondition(slots[tail] != nil, "BUG DETECTED: RingBuffer tail slot \(tail) is empty: \(state)")
            }
            if storedCount < capacity {
                let afterTail = (head + storedCount) & mask
                let beforeHead = (head + capacity - 1) & mask
                precondition(
                    slots[afterTail] == nil,
                    "BUG DETECTED: RingBuffer slot \(afterTail) after the tail is occupied: \(state)")
                precondition(
                    slots[beforeHead] == nil,
                    "BUG DETECTED: RingBuffer slot \(beforeHead) before the head is occupied: \(state)")
            }
        #endif
    }
}
