import TaskLoopCore

/// The open debounce windows of one delay, in the order they close: each waiting record has
/// exactly one node in the list, and re-arming a window moves that node to the end.
///
/// Every window of one list lasts the same `delayNanoseconds` from the moment it opened, so the
/// order of opening is the order of closing: appending keeps the list sorted, and moving a
/// re-armed record's node to the end is O(1). A record that keeps changing inside its window
/// costs a move per change: no allocation, no reference counting, and nothing superseded to
/// skip when its old deadline passes. (An append-only queue of deadline entries, each checked
/// against its record when due, spent about 320 of W2's 2,440 instructions a change on them.)
/// Equal deadlines close in the order their windows last opened, as timers do.
///
/// The links live in the list's nodes (`NodeList`), not in the records: a record keeps only
/// its node's number (`AnyTaskRecord.windowNode`, in padding that was free), so a task that
/// never debounces pays nothing.
///
/// A linked record that stops debouncing some other way (it was removed, cancelled or
/// declared with a debounce of zero) keeps its node until the node reaches the head, where it
/// is dropped without a call: only the head's deadline is ever read, and the record's own
/// state says whether it still waits (`TaskStateMachine.debounceDeadline`, zero once it does
/// not). A record moved to the list of another delay leaves this one first (`remove`).
///
/// The loop timer is armed for the head's deadline when the list goes from empty to busy and
/// after each firing, never on a move; a head that has since moved later makes one firing find
/// nothing due.
///
/// Loop thread only.
final class DebounceWindows: DeadlineList {
    let delayNanoseconds: UInt64
    /// The linked records, in the order their windows close. @exclusivity(unchecked): loop
    /// thread only, and no access to it calls anything that reaches the list; checked, every
    /// node access is a dynamic check (W2 2,154 → 2,796 instructions a change; docs/safety.md).
    @exclusivity(unchecked) private var nodes = NodeList<AnyTaskRecord>()
    private var timer: (any LoopTimer)?
    private var armed = false

    init(delayNanoseconds: UInt64) {
        self.delayNanoseconds = delayNanoseconds
    }

    /// Linked records, for tests.
    var count: Int { nodes.count }

    /// Creates the loop timer. Separate from `init` because it can fail (loop shut down).
    /// `onDue` is called with each record whose window closes, in the order they close.
    func attach(to loop: any TaskLoop, onDue: @escaping (_ due: AnyTaskRecord) -> Void) throws(LoopError) {
        // The loop unowned, as in the loop's own timers: the loop owns its timers, so a strong
        // reference here would be a cycle through this closure when the loop is dropped.
        timer = try loop.makeTimer { [unowned self, unowned loop] in
            self.fire(now: loop.now.nanoseconds, onDue: onDue)
        }
    }

    /// Opens (or re-opens) `record`'s window: its state's debounce deadline, which must be
    /// `delayNanoseconds` after the current time, so the latest of the list.
    @inline(__always)
    func open(_ record: AnyTaskRecord) {
        if record.windowNode != 0 {
            nodes.moveToEnd(record.windowNode)
        } else {
            record.windowNode = nodes.append(record)
        }
        if !armed {
            armed = true
            try? timer?.start(at: LoopInstant(nanoseconds: record.state.debounceDeadline))
        }
    }

    /// Takes `record` out of the list if it is linked: for a record whose options move it to
    /// the windows of another delay.
    func remove(_ record: AnyTaskRecord) {
        guard record.windowNode != 0 else { return }
        nodes.remove(record.windowNode)
        record.windowNode = 0
    }

    private func fire(now: UInt64, onDue: (AnyTaskRecord) -> Void) {
        // A handler may open windows (always due after `now`, so this loop never reaches them)
        // or close the list (the loop then finds it empty).
        while nodes.head != 0 {
            let deadline = nodes.withPayload(nodes.head) { $0.state.debounceDeadline }
            // Zero: the record stopped debouncing while linked; it goes without a call.
            guard deadline <= now else { break }
            let record = nodes.remove(nodes.head)
            record.windowNode = 0
            if deadline != 0 { onDue(record) }
        }
        if nodes.head != 0, let timer {
            let deadline = nodes.withPayload(nodes.head) { $0.state.debounceDeadline }
            try? timer.start(at: LoopInstant(nanoseconds: deadline))
        } else {
            armed = false
        }
    }

    /// Unlinks every record and closes the timer.
    func close() {
        while nodes.head != 0 { nodes.remove(nodes.head).windowNode = 0 }
        timer?.close()
        timer = nil
        armed = false
    }

    /// A description of the first broken invariant, or nil: every link answered by its
    /// reverse, each linked record knowing its node, `count` the number linked, and the
    /// deadlines of the records still debouncing in order of closing. For tests; loop thread
    /// only; O(count).
    func brokenInvariant() -> String? {
        var lastDeadline: UInt64 = 0
        return nodes.brokenInvariant { number, record in
            if record.windowNode != number { return "the record of node \(number) names node \(record.windowNode)" }
            let deadline = record.state.debounceDeadline
            if deadline != 0 {
                if deadline < lastDeadline { return "node \(number) closes at \(deadline), before \(lastDeadline)" }
                lastDeadline = deadline
            }
            return nil
        }
    }
}
