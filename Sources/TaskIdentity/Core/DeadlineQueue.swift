import TaskLoopCore

/// Deadlines that all lie one fixed `delay` after the moment they were set: progress delays
/// and synchronous runs' delays (debounce windows, re-armed on every change, have their own
/// list: `DebounceWindows`). Such deadlines arrive in order, so a FIFO replaces a heap: pushing is
/// O(1) and allocation-free, and the whole queue needs one loop timer.
///
/// An entry is checked against its record when it comes due and skipped if that run is no
/// longer current (lazy deletion): these deadlines are set once per run, not once per change,
/// so superseded entries are few.
///
/// Entries are kept in fixed-size chunks (`ChunkedQueue`), so a queue of millions never stops
/// the loop to grow.
///
/// The timer is armed for the head's deadline only when the queue goes from idle to busy and
/// after each firing, never on a push into a busy queue; a head that has since moved later just
/// makes one firing find nothing due.
///
/// Loop thread only.
final class DeadlineQueue<Entry: DeadlineEntry>: DeadlineList {
    let delayNanoseconds: UInt64
    // Entries carry their own deadline, beside fields of their own of the same alignment.
    // @exclusivity(unchecked), these three: loop thread only, and no access is held across a
    // call that could reach the queue again; no dynamic check per push (docs/safety.md).
    @exclusivity(unchecked) private var entries = ChunkedQueue<Entry>()
    @exclusivity(unchecked) private var timer: (any LoopTimer)?
    @exclusivity(unchecked) private var armed = false

    init(delayNanoseconds: UInt64) {
        self.delayNanoseconds = delayNanoseconds
    }

    var count: Int { entries.count }

    /// Creates the loop timer. Separate from `init` because it can fail (loop shut down).
    /// `onDue` is called with each entry that comes due, in order.
    func attach(to loop: any TaskLoop, onDue: @escaping (_ entry: Entry) -> Void) throws(LoopError) {
        // The loop unowned, as in the loop's own timers: the loop owns its timers, so a strong
        // reference here would be a cycle through this closure when the loop is dropped.
        timer = try loop.makeTimer { [unowned self, unowned loop] in
            self.fire(now: loop.now.nanoseconds, onDue: onDue)
        }
    }

    /// Adds `entry`, whose deadline must be `delayNanoseconds` after the current time.
    @inline(__always)
    func push(_ entry: Entry) {
        entries.append(entry)
        if !armed {
            armed = true
            try? timer?.start(at: LoopInstant(nanoseconds: entry.deadline))
        }
    }

    private func fire(now: UInt64, onDue: (Entry) -> Void) {
        // Each entry is moved out before it is handled, never copied (a copy retains and
        // releases every reference it holds, on records that are mostly cold in the cache).
        // A handler may push: a new entry is due `delayNanoseconds` after `now`, so this loop
        // never reaches it. A handler may close the queue: the loop then finds it empty.
        // Deadlines are read in place: `entries.first?.deadline` would copy each entry.
        while let deadline = entries.withFirst({ $0?.deadline }), deadline <= now {
            onDue(entries.popFirst()!)
        }
        if let deadline = entries.withFirst({ $0?.deadline }), let timer {
            try? timer.start(at: LoopInstant(nanoseconds: deadline))
        } else {
            armed = false
        }
    }

    /// Drops every entry and closes the timer.
    func close() {
        while entries.popFirst() != nil {}
        timer?.close()
        timer = nil
        armed = false
    }
}

/// A registry's list of deadlines of one fixed delay, with one loop timer: `DeadlineQueue`,
/// `DebounceWindows` and `TimeLimits`, made and shared per delay by
/// `OptionsTable` (one per delay, made with the first options that use it). Loop thread only.
protocol DeadlineList: AnyObject {
    /// What the list hands its owner when a deadline passes.
    associatedtype Due
    init(delayNanoseconds: UInt64)
    /// Creates the loop timer; `onDue` is called with each deadline that passes, in order.
    func attach(to loop: any TaskLoop, onDue: @escaping (_ due: Due) -> Void) throws(LoopError)
    /// Drops everything still listed and closes the timer.
    func close()
}

/// An entry of a `DeadlineQueue`: something due at `deadline` (nanoseconds of loop time).
protocol DeadlineEntry {
    var deadline: UInt64 { get }
}
