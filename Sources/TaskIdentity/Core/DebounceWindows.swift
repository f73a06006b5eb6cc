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
/// The links live in the list's nodes, not in the records: a record keeps only its node's
/// number (`AnyTaskRecord.windowNode`, in padding that was free), so a task that never
/// debounces pays nothing. Nodes are kept in chunks of 1,024 (none is ever moved, so the list
/// never stops the loop to grow), reused through a free list, and all dropped whenever the
/// list empties.
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
final class DebounceWindows {
    /// One linked record. `next` and `previous` are node numbers: a node's index plus one, so
    /// that zero means none.
    struct Node {
        var record: AnyTaskRecord?
        var next: UInt32
        var previous: UInt32
    }

    static let chunkShift = 10
    static let chunkCapacity = 1 << chunkShift

    let delayNanoseconds: UInt64
    /// The nodes. @exclusivity(unchecked): loop thread only, and `withNode`'s access calls
    /// nothing that reaches the list; checked, every node access is a dynamic check (W2
    /// 2,154 → 2,796 instructions a change; docs/safety.md).
    @exclusivity(unchecked) private var chunks: ContiguousArray<ContiguousArray<Node>> = []
    /// The first node of the free list (chained through `next`), or zero.
    private var firstFree: UInt32 = 0
    /// The window that closes first, and the one that closes last (node numbers).
    private var head: UInt32 = 0
    private var tail: UInt32 = 0
    private var timer: (any LoopTimer)?
    private var armed = false
    /// Linked records.
    private(set) var count = 0
    /// Nodes allocated in `chunks` (linked or free).
    private var nodeCount = 0

    init(delayNanoseconds: UInt64) {
        self.delayNanoseconds = delayNanoseconds
    }

    /// Creates the loop timer. Separate from `init` because it can fail (loop shut down).
    /// `onDue` is called with each record whose window closes, in the order they close.
    func attach(to loop: any TaskLoop, onDue: @escaping (_ record: AnyTaskRecord) -> Void) throws(LoopError) {
        // The loop unowned, as in the loop's own timers: the loop owns its timers, so a strong
        // reference here would be a cycle through this closure when the loop is dropped.
        timer = try loop.makeTimer { [unowned self, unowned loop] in
            self.fire(now: loop.now.nanoseconds, onDue: onDue)
        }
    }

    // MARK: - Nodes

    @inline(__always)
    private func withNode<Result>(_ number: UInt32, _ body: (inout Node) -> Result) -> Result {
        let index = Int(number &- 1)
        return body(&chunks[index >> Self.chunkShift][index & (Self.chunkCapacity - 1)])
    }

    /// A node holding `record`, unlinked: a free one, or a new one at the end of the chunks.
    @inline(__always)
    private func makeNode(_ record: AnyTaskRecord) -> UInt32 {
        if firstFree != 0 {
            let number = firstFree
            withNode(number) { node in
                firstFree = node.next
                node = Node(record: record, next: 0, previous: 0)
            }
            return number
        }
        if nodeCount & (Self.chunkCapacity - 1) == 0 {
            var chunk = ContiguousArray<Node>()
            chunk.reserveCapacity(Self.chunkCapacity)
            chunks.append(chunk)
        }
        chunks[nodeCount >> Self.chunkShift].append(Node(record: record, next: 0, previous: 0))
        nodeCount += 1
        return UInt32(truncatingIfNeeded: nodeCount)
    }

    /// Returns `number` (unlinked) to the free list, releasing its record; drops every node
    /// once none is linked.
    @inline(__always)
    private func release(_ number: UInt32) {
        if count == 0 {
            chunks = []
            nodeCount = 0
            firstFree = 0
            return
        }
        withNode(number) { node in
            node = Node(record: nil, next: firstFree, previous: 0)
        }
        firstFree = number
    }

    // MARK: - Links

    @inline(__always)
    private func link(_ number: UInt32) {
        let last = tail
        withNode(number) { node in
            node.previous = last
            node.next = 0
        }
        if last != 0 {
            withNode(last) { $0.next = number }
        } else {
            head = number
        }
        tail = number
    }

    @inline(__always)
    private func unlink(_ number: UInt32) {
        let (previous, next) = withNode(number) { ($0.previous, $0.next) }
        if previous != 0 { withNode(previous) { $0.next = next } } else { head = next }
        if next != 0 { withNode(next) { $0.previous = previous } } else { tail = previous }
    }

    // MARK: - Windows

    /// Opens (or re-opens) `record`'s window: its state's debounce deadline, which must be
    /// `delayNanoseconds` after the current time, so the latest of the list.
    @inline(__always)
    func open(_ record: AnyTaskRecord) {
        let number = record.windowNode
        if number != 0 {
            if number == tail { return }
            unlink(number)
            link(number)
        } else {
            let made = makeNode(record)
            record.windowNode = made
            count += 1
            link(made)
        }
        if !armed {
            armed = true
            try? timer?.start(at: LoopInstant(nanoseconds: record.state.debounceDeadline))
        }
    }

    /// Takes `record` out of the list if it is linked: for a record whose options move it to
    /// the windows of another delay.
    func remove(_ record: AnyTaskRecord) {
        let number = record.windowNode
        guard number != 0 else { return }
        unlink(number)
        record.windowNode = 0
        count -= 1
        release(number)
    }

    private func fire(now: UInt64, onDue: (AnyTaskRecord) -> Void) {
        // A handler may open windows (always due after `now`, so this loop never reaches them)
        // or close the list (the loop then finds it empty).
        while head != 0 {
            let number = head
            let record = withNode(number) { $0.record! }
            let deadline = record.state.debounceDeadline
            // Zero: the record stopped debouncing while linked; it goes without a call.
            guard deadline <= now else { break }
            unlink(number)
            record.windowNode = 0
            count -= 1
            release(number)
            if deadline != 0 { onDue(record) }
        }
        if head != 0, let timer {
            let deadline = withNode(head) { $0.record!.state.debounceDeadline }
            try? timer.start(at: LoopInstant(nanoseconds: deadline))
        } else {
            armed = false
        }
    }

    /// Unlinks every record and closes the timer.
    func close() {
        while head != 0 { remove(withNode(head) { $0.record! }) }
        timer?.close()
        timer = nil
        armed = false
    }

    // MARK: - Checks

    /// A description of the first broken invariant, or nil: every link answered by its
    /// reverse, each linked record knowing its node, `tail` the last node, `count` the number
    /// linked, and the deadlines of the records still debouncing in order of closing. For
    /// tests; loop thread only; O(count).
    func brokenInvariant() -> String? {
        var linked = 0
        var previous: UInt32 = 0
        var lastDeadline: UInt64 = 0
        var number = head
        while number != 0 {
            linked += 1
            let node = withNode(number) { $0 }
            guard let record = node.record else { return "node \(number) is linked without a record" }
            if node.previous != previous { return "node \(number)'s previous link is not its predecessor" }
            if record.windowNode != number { return "the record of node \(number) names node \(record.windowNode)" }
            let deadline = record.state.debounceDeadline
            if deadline != 0 {
                if deadline < lastDeadline { return "node \(number) closes at \(deadline), before \(lastDeadline)" }
                lastDeadline = deadline
            }
            previous = number
            number = node.next
        }
        if tail != previous { return "the tail is not the last node" }
        if linked != count { return "\(linked) records linked, count says \(count)" }
        return nil
    }
}
