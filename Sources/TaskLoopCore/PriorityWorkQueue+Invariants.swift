extension PriorityWorkQueue {
    /// Checks that `count` is the sum of the bands' counts, in builds with
    /// `-DTASKIDENTITY_INTERNAL_CHECKS` only (elsewhere an empty body the optimizer removes).
    /// Each band checks its own ring on every change.
    ///
    /// Called after every mutating operation; traps with the queue's state printed.
    @inline(__always)
    @inlinable
    package func checkInvariants() {
        #if TASKIDENTITY_INTERNAL_CHECKS
            let bandCounts = [bands.0.count, bands.1.count, bands.2.count, bands.3.count]
            precondition(
                count == bandCounts.reduce(0, +),
                "BUG DETECTED: PriorityWorkQueue count \(count) but bands hold \(bandCounts)")
        #endif
    }
}
