import TaskLoopCore

/// The time limits (`timeout:`) of one length of the runs under way, in the order they pass:
/// one node per running run that has a limit, taken out as soon as the run ends or is
/// cancelled, so that a registry holds a node, and its record, only while the run is live.
///
/// Every limit of one list lasts the same `delayNanoseconds` from its run's start, so the order
/// of starting is the order of passing: appending keeps the list sorted. Nodes live in a
/// `NodeList`; the core keeps each record's node number in the record's rare state
/// (`RareTaskState.timeLimit`), since most records never have a limit.
///
/// The loop timer is armed for the head's deadline when the list goes from empty to busy and
/// after each firing; a head taken out meanwhile makes one firing find nothing due.
///
/// Loop thread only.
final class TimeLimits: DeadlineList {
    /// What a node holds: the run and when its limit passes.
    struct Limit {
        let record: AnyTaskRecord
        let generation: UInt64
        let deadline: UInt64
    }

    let delayNanoseconds: UInt64
    /// The runs' limits, in the order they pass. @exclusivity(unchecked): loop thread only, and
    /// no access to it calls anything that reaches the list (docs/safety.md).
    @exclusivity(unchecked) private var nodes = NodeList<Limit>()
    private var timer: (any LoopTimer)?
    private var armed = false

    init(delayNanoseconds: UInt64) {
        self.delayNanoseconds = delayNanoseconds
    }

    /// Limits of runs under way, for tests.
    var count: Int { nodes.count }

    /// Creates the loop timer. Separate from `init` because it can fail (loop shut down).
    /// `onDue` is called with each limit that passes, in order, after its node is gone.
    func attach(to loop: any TaskLoop, onDue: @escaping (_ due: Limit) -> Void) throws(LoopError) {
        // The loop unowned, as in the loop's own timers: the loop owns its timers, so a strong
        // reference here would be a cycle through this closure when the loop is dropped.
        timer = try loop.makeTimer { [unowned self, unowned loop] in
            self.fire(now: loop.now.nanoseconds, onDue: onDue)
        }
    }

    /// Adds the limit of the run `generation` of `record`, which starts now (`now`), and
    /// returns its node's number.
    func add(_ record: AnyTaskRecord, generation: UInt64, now: UInt64) -> UInt32 {
        let deadline = LoopInstant.nanoseconds(now, plus: delayNanoseconds)
        let number = nodes.append(Limit(record: record, generation: generation, deadline: deadline))
        if !armed {
            armed = true
            try? timer?.start(at: LoopInstant(nanoseconds: deadline))
        }
        return number
    }

    /// The limit held by node `number`.
    func limit(_ number: UInt32) -> Limit { nodes.withPayload(number) { $0 } }

    /// Takes out node `number`: its run ended or was cancelled.
    func remove(_ number: UInt32) { nodes.remove(number) }

    private func fire(now: UInt64, onDue: (Limit) -> Void) {
        // A handler may add limits (they pass after `now`, so this loop never reaches them),
        // take some out, or close the list (the loop then finds it empty).
        while nodes.head != 0, nodes.withPayload(nodes.head, { $0.deadline }) <= now {
            onDue(nodes.remove(nodes.head))
        }
        if nodes.head != 0, let timer {
            try? timer.start(at: LoopInstant(nanoseconds: nodes.withPayload(nodes.head) { $0.deadline }))
        } else {
            armed = false
        }
    }

    /// Takes out every node and closes the timer.
    func close() {
        while nodes.head != 0 { nodes.remove(nodes.head) }
        timer?.close()
        timer = nil
        armed = false
    }

    /// A description of the first broken invariant, or nil: every link answered by its
    /// reverse, `count` the number linked, deadlines in order. For tests; O(count).
    func brokenInvariant() -> String? {
        var lastDeadline: UInt64 = 0
        return nodes.brokenInvariant { number, limit in
            if limit.deadline < lastDeadline {
                return "node \(number) passes at \(limit.deadline), before \(lastDeadline)"
            }
            lastDeadline = limit.deadline
            return nil
        }
    }
}
