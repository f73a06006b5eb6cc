import TaskLoopCore

// Concurrency limits: the start pass's gate, the queue a run waits in, and the places given
// back when runs stop.
extension RegistryCore {
    /// The start pass reached `record`, whose options have a concurrency limit (`queue`): the
    /// state machine decides whether it starts now or waits in the queue. Returns true when
    /// nothing starts now. Apart from the hot path: most tasks have no limit.
    @inline(never)
    func waitsForLimit(_ record: AnyTaskRecord, _ queue: LimitQueue) -> Bool {
        let occupancy = TaskStateMachine.LimitOccupancy(isFull: queue.isFull, othersWait: !queue.isEmpty)
        switch tally({ record.state.startAtLimit(occupancy, counters: &$0) }) {
        case .start:
            return false
        case .movedOn:
            return true
        case .waitInQueue(let effects):
            // Last among its priority: the queue is ordered by when each slot's identity last
            // changed, as the identity most likely to be kept is the one that has held longest.
            // (The node of a replaced generation went with it, in `releaseRareState`.)
            let priority = queuePriority(of: record)
            // Only while every place is taken: with one free, the head starts in this pass.
            if queue.isFull && queue.isQueueFull {
                guard let victim = queue.removeOldestToShed(forNewcomerOf: priority) else {
                    // The newcomer is shed: it never joins.
                    carryOut(effects, on: record)
                    shed(record, from: queue)
                    return true
                }
                victim.record.rare?.limitQueued = nil
                shed(victim.record, from: queue)
            }
            record.makeRare().limitQueued = queue.join(record, priority: priority, now: unretainedLoop.now.nanoseconds)
            if trace != nil { trace(record, record.state.generation, .queued) }
            carryOut(effects, on: record)
            // Others were queued ahead of it, but a place is free: the head starts this turn.
            if !queue.isFull { scheduleAdmission(queue) }
            return true
        }
    }

    /// A full queue sheds the generation of `record` waiting in it (or about to join it): it
    /// ends `cancelled(.shed)` without running, counted in `shed` and `cancelled`. Its node is
    /// already out of the queue.
    func shed(_ record: AnyTaskRecord, from queue: LimitQueue) {
        queue.shedCount &+= 1
        tally { $0.shed &+= 1 }
        dropPending(record, reason: .shed)
    }

    /// The run `generation` of `record` just started under `queue`'s limit: it holds a place
    /// until its action returns.
    @inline(never)
    func takePlace(_ record: AnyTaskRecord, generation: UInt64, in queue: LimitQueue) {
        queue.running += 1
        record.makeRare().placesHeld.append((generation, queue))
    }

    /// The run `generation` of `record` stopped (its action returned, or a delayed synchronous
    /// run was cancelled before its action was called): the place it held, if any, goes back,
    /// and the head of the queue starts in this turn's start pass.
    @inline(never)
    func givePlaceBack(_ record: AnyTaskRecord, generation: UInt64) {
        guard let rare = record.rare, !rare.placesHeld.isEmpty, let queue = rare.takePlace(of: generation) else {
            return
        }
        queue.running -= 1
        if !queue.isEmpty { scheduleAdmission(queue) }
    }

    /// Admits from `queue` at the end of this turn's start pass.
    func scheduleAdmission(_ queue: LimitQueue) {
        if limits.noteAdmissionDue(queue) { scheduleStartPass() }
    }

    /// The start pass's last step: every queue with a free place starts its heads, in order,
    /// until its runs are all taken again or no one waits.
    func admitFromQueues() {
        while let queue = limits.nextAdmissionDue() {
            let now = unretainedLoop.now.nanoseconds
            while !queue.isFull, let waiter = queue.removeHead() {
                let record = waiter.record
                record.rare?.limitQueued = nil
                // Every node's generation waits (a node goes with its generation), checked
                // rather than assumed: starting a generation that is not waiting would trap.
                guard record.state.pending == .startLimited else { continue }
                tally {
                    $0.queueWaitNanoseconds &+= now &- waiter.since
                    record.state.admitted(counters: &$0)
                }
                start(record, admitted: true)
            }
        }
    }
}
