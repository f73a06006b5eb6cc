/// The timers a loop has created and not yet closed, so that its shutdown can close them.
/// Shared by `TestLoop` and, in its own module, `NIOTaskLoop` (package access).
///
/// Unretained: a timer's owner keeps it alive, and a timer leaves the table when it closes, at
/// the latest in its `deinit`; a strong table would keep every dropped timer open until shutdown.
///
/// Loop thread only, like the timers themselves.
package struct OpenTimers<Timer: AnyObject> {
    // Unmanaged: unretained on purpose (above); an entry never outlives its timer's close.
    private var table: [ObjectIdentifier: Unmanaged<Timer>] = [:]

    /// An empty table. May be called from any thread.
    package init() {}

    /// Timers created and not yet closed. Loop thread only.
    package var count: Int { table.count }

    /// Records a timer just created. Loop thread only.
    package mutating func add(_ timer: Timer) {
        // Unretained: `remove` runs when the timer closes, at the latest in its deinit.
        table[ObjectIdentifier(timer)] = Unmanaged.passUnretained(timer)
    }

    /// Forgets a timer that closed. Loop thread only.
    package mutating func remove(_ timer: Timer) {
        table[ObjectIdentifier(timer)] = nil
    }

    /// The open timers, retained, for closing them: a copy, since each close removes its
    /// timer from the table. Loop thread only.
    package var snapshot: [Timer] { table.values.map { $0.takeUnretainedValue() } }
}
