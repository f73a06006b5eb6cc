import TaskLoopCore

// A removed task's runs, awaited by the task re-declared in its place.
extension RegistryCore {
    // MARK: - A removed task's runs, awaited by its successor

    /// `record`, new in its slot, takes over the ending runs of `previous`, the removed task of
    /// the same slot and name: its `awaitPrevious` or `keepRunning` generation waits for them.
    @usableFromInline
    func inherit(_ record: AnyTaskRecord, endingRunsOf previous: AnyTaskRecord) {
        guard previous.state.endingRuns > 0 else { return }
        record.state.inheritEndingRuns(previous.state.endingRuns)
        previous.makeRare().successor = record
    }

    /// One of `record`'s cancelled runs ended after its slot was removed: pass it on along the
    /// chain of successors, and forget each removed record once its runs have all ended.
    func removedRecordRunEnded(_ record: AnyTaskRecord) {
        var current = record
        while true {
            let successor = current.rare?.successor
            if current.state.endingRuns == 0 {
                if successor != nil { current.rare?.successor = nil }
                current.drained()
            }
            guard let successor else { return }
            carryOut(successor.state.previousRunEnded(gate: gate(successor)), on: successor)
            guard successor.state.isRemoved else { return }
            current = successor
        }
    }

    #if TASKIDENTITY_INTERNAL_CHECKS
        /// The internal-checks build checks the record's and the counters' invariants after
        /// each event.
        func checkInvariants(_ record: AnyTaskRecord) {
            if let broken = record.state.brokenInvariant() {
                preconditionFailure("BUG DETECTED: \(broken) in \(record.state)")
            }
            precondition(
                (record.pendingAction != nil) == (record.state.pending != .none),
                "BUG DETECTED: pending action and pending stage disagree in \(record.state)")
            precondition(
                record.windowNode == 0 || record.options.debounceWindows != nil,
                "BUG DETECTED: a record linked into the debounce windows of options without a debounce")
            if let broken = counters.brokenInvariant() {
                preconditionFailure("BUG DETECTED: \(broken) in \(counters)")
            }
        }
    #endif

    /// Timers the registry holds open (deadline queues, and the throttle, retry and refresh
    /// timers of its tasks), for tests.
    var openTimerCount: Int {
        optionsTable.openTimerCount
    }
}
