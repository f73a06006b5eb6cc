/// A registry's concurrency limits: the queue of each limit in use, by the limit's number, the
/// limit of tasks declared without one, and the queues due to admit at the end of the start
/// pass.
///
/// Loop thread only, inside its core.
final class LimitQueues {
    /// The registry's concurrency limit for tasks declared without one
    /// (`RegistryConfiguration.concurrencyLimit`).
    let defaultLimit: ConcurrencyLimit?
    private var queues: [UInt32: LimitQueue] = [:]
    /// Queues with a free place and waiters, admitted from at the end of the start pass.
    /// Unchecked exclusivity: loop thread only, read by every start pass, never across a call.
    @exclusivity(unchecked) private var due: [LimitQueue] = []

    init(defaultLimit: ConcurrencyLimit?) {
        self.defaultLimit = defaultLimit
    }

    /// The queue for `limit`, made on first use.
    func queue(for limit: ConcurrencyLimit) -> LimitQueue {
        if let queue = queues[limit.id] { return queue }
        let queue = LimitQueue(
            maxRunning: limit.maxRunning, maxQueued: limit.maxQueued, shedding: limit.shedding,
            fairness: limit.fairness)
        queues[limit.id] = queue
        return queue
    }

    /// The queue for `limit` if it was ever used.
    func existingQueue(for limit: ConcurrencyLimit) -> LimitQueue? { queues[limit.id] }

    /// Whether no limit has a queue (none used, or closed).
    var isEmpty: Bool { queues.isEmpty }

    /// Whether some queue is due to admit.
    var hasAdmissionsDue: Bool { !due.isEmpty }

    /// `queue` is due to admit at the end of this turn's start pass: false if it already was.
    func noteAdmissionDue(_ queue: LimitQueue) -> Bool {
        guard !queue.admissionScheduled else { return false }
        queue.admissionScheduled = true
        due.append(queue)
        return true
    }

    /// The next queue due to admit, no longer due.
    func nextAdmissionDue() -> LimitQueue? {
        guard let queue = due.popLast() else { return nil }
        queue.admissionScheduled = false
        return queue
    }

    /// Closes every queue. Only after every record was removed.
    func closeAll() {
        for queue in queues.values { queue.close() }
        queues = [:]
        due = []
    }
}
