/// One registry's side of one `ConcurrencyLimit`: how many of its runs are under way, and the
/// generations waiting for one of them to end, ordered by priority, then by when each joined
/// (when its slot's identity last changed: a new identity for a queued slot replaces the
/// queued generation, whose node goes with it, and joins last). The core keeps each waiting
/// record's node in its rare state (`RareTaskState.limitQueued`), so that a generation that ends
/// without starting leaves at once: every node is a generation waiting.
///
/// Loop thread only.
final class LimitQueue {
    /// A slot waiting for a run of the limit: its record, and when it joined (loop nanoseconds).
    struct Waiter {
        let record: AnyTaskRecord
        let since: UInt64
    }

    /// The waiters of one priority, in the order they joined; or, under round-robin fairness,
    /// by group, the groups in turn (`fair`, and `waiters` unused).
    struct Lane {
        let priority: UInt8
        var waiters = NodeList<Waiter>()
        let fair: FairLane?

        var count: Int { fair?.count ?? waiters.count }
    }

    let maxRunning: Int
    /// How many generations may wait (`Int.max` for no bound), and which one a full queue
    /// sheds (`ConcurrencyLimit.maxQueued`, `shedding`).
    let maxQueued: Int
    let shedding: ConcurrencyLimit.Shedding
    /// Round-robin shares among groups of keys (`ConcurrencyLimit.fairness`), if any.
    let fairness: ConcurrencyLimit.Fairness?
    /// Generations this queue shed, for `limitState(of:)`.
    var shedCount: UInt64 = 0
    /// Runs of the limit whose action has not returned (cancelled ones included: a place is
    /// given back when the action stops, as a semaphore's would be).
    var running = 0
    /// The lanes that have waiters, highest priority first (few: one per priority in use).
    private var lanes: [Lane] = []
    /// In the core's list of queues to admit from at the end of this turn's start pass.
    var admissionScheduled = false

    init(
        maxRunning: Int, maxQueued: Int? = nil, shedding: ConcurrencyLimit.Shedding = .oldest,
        fairness: ConcurrencyLimit.Fairness? = nil
    ) {
        self.maxRunning = maxRunning
        self.maxQueued = maxQueued ?? .max
        self.shedding = shedding
        self.fairness = fairness
    }

    /// Whether a generation joining now would pass `maxQueued`.
    var isQueueFull: Bool { maxQueued != .max && count >= maxQueued }

    /// Takes out the waiter a full queue sheds for a newcomer of `priority`: the one that has
    /// waited longest among the lowest priority queued, when that priority is not above the
    /// newcomer's; nil when the newcomer itself is to be shed (`shedding` is `.newest`, the
    /// queue is empty, as under `maxQueued: 0`, or every queued generation outranks it).
    func removeOldestToShed(forNewcomerOf priority: UInt8) -> Waiter? {
        guard shedding == .oldest, let lowest = lanes.indices.last, lanes[lowest].priority <= priority else {
            return nil
        }
        if let fair = lanes[lowest].fair {
            let waiter = fair.removeOldest()
            if fair.count == 0 { lanes.remove(at: lowest) }
            return waiter
        }
        let head = lanes[lowest].waiters.head
        let waiter = lanes[lowest].waiters.remove(head)
        if lanes[lowest].waiters.count == 0 { lanes.remove(at: lowest) }
        return waiter
    }

    /// No more run of the limit may start now.
    var isFull: Bool { running >= maxRunning }
    /// No node is queued.
    var isEmpty: Bool { lanes.isEmpty }
    /// Generations queued.
    var count: Int { lanes.reduce(0) { $0 + $1.count } }

    /// Queues `record` last among the waiters of `priority` (of its group, under fairness), and
    /// returns where it is.
    func join(_ record: AnyTaskRecord, priority: UInt8, now: UInt64) -> LimitQueueLink {
        let index = lanes.firstIndex { $0.priority <= priority } ?? lanes.endIndex
        if index == lanes.endIndex || lanes[index].priority != priority {
            lanes.insert(Lane(priority: priority, fair: fairness.map { _ in FairLane() }), at: index)
        }
        let waiter = Waiter(record: record, since: now)
        if let fair = lanes[index].fair, let fairness {
            let (group, number) = fair.append(waiter, group: fairness.group(record.traceKey))
            return LimitQueueLink(queue: self, priority: priority, node: number, group: group)
        }
        return LimitQueueLink(queue: self, priority: priority, node: lanes[index].waiters.append(waiter), group: nil)
    }

    /// Takes the waiter at `link` out of the queue.
    func leave(_ link: LimitQueueLink) {
        let (priority, node) = (link.priority, link.node)
        guard let index = lanes.firstIndex(where: { $0.priority == priority }) else { return }
        if let fair = lanes[index].fair, let group = link.group {
            fair.remove(node, from: group)
            if fair.count == 0 { lanes.remove(at: index) }
            return
        }
        let emptied = lanes.withUnsafeMutableBufferPointer { lanes in
            // In place: through the array's subscript, the list's chunks were retained and
            // released on every call (2% of W9's CPU).
            lanes[index].waiters.remove(node)
            return lanes[index].waiters.count == 0
        }
        if emptied { lanes.remove(at: index) }
    }

    /// Moves the waiter at `link` to the lane of `priority` (a waiter raised it), last among
    /// that lane's waiters as a newcomer would be; returns its new link.
    func move(_ link: LimitQueueLink, of record: AnyTaskRecord, to priority: UInt8, now: UInt64) -> LimitQueueLink {
        leave(link)
        return join(record, priority: priority, now: now)
    }

    /// Takes out the first waiter of the highest priority, if any.
    func removeHead() -> Waiter? {
        guard !lanes.isEmpty else { return nil }
        if let fair = lanes[0].fair {
            let waiter = fair.removeHead()
            if fair.count == 0 { lanes.removeFirst() }
            return waiter
        }
        let head = lanes[0].waiters.head
        let waiter = lanes[0].waiters.remove(head)
        if lanes[0].waiters.count == 0 { lanes.removeFirst() }
        return waiter
    }

    /// When the generation that has waited longest joined, or nil for an empty queue.
    var earliestSince: UInt64? {
        lanes.lazy.compactMap { lane in
            lane.fair.map(\.earliestSince) ?? lane.waiters.withPayload(lane.waiters.head) { $0.since }
        }.min()
    }

    /// Drops every waiter (shutdown, after every record was removed).
    func close() { lanes = [] }

    /// A description of the first broken invariant, or nil: lanes non-empty and in strictly
    /// falling priority, each a well-linked list in the order its nodes joined, every node's
    /// generation waiting in a limit's queue. For tests.
    func brokenInvariant() -> String? {
        var previous: UInt8?
        for lane in lanes {
            if lane.count == 0 { return "an empty lane for priority \(lane.priority)" }
            if let previous, previous <= lane.priority { return "lanes out of priority order" }
            previous = lane.priority
            if let fair = lane.fair {
                if fair.allWaiters.contains(where: { $0.record.state.pending != .startLimited }) {
                    return "a fair lane's waiter is not queued"
                }
                continue
            }
            var lastSince: UInt64 = 0
            let fault = lane.waiters.brokenInvariant { number, waiter in
                defer { lastSince = waiter.since }
                if waiter.record.state.pending != .startLimited { return "node \(number)'s generation is not queued" }
                return waiter.since < lastSince ? "node \(number) joined before the node ahead of it" : nil
            }
            if let fault { return fault }
        }
        return nil
    }
}

/// Where a queued record's node is: its limit's queue, the lane's priority, the node (under
/// fairness, its group and its number there).
struct LimitQueueLink {
    let queue: LimitQueue
    let priority: UInt8
    let node: UInt32
    let group: FairLane.Group?
}
