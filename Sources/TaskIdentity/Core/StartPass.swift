/// The start pass's state: the records whose pending runs start at the end of this loop turn,
/// whether a pass is posted or under way, and the tasks of runs that ended, released one before
/// each start (see `keepEnded`). The core runs the pass (`RegistryCore.startQueuedRuns`); each
/// call here is a short access of its own, so that a start that queues another (a synchronous
/// action declaring) never overlaps one.
///
/// Loop thread only, inside its core.
struct StartPass {
    /// The most ended tasks kept (`keepEnded`): a few hundred kilobytes.
    static let endedTasksKept = 1024

    /// Records queued to start at the end of this turn (see `RegistryCore.queueStart`).
    private var queued: [AnyTaskRecord] = []
    /// The records this round of the pass starts, from `next` on.
    private var starting: [AnyTaskRecord] = []
    private var next = 0
    /// Handles of runs that ended, up to `endedTasksKept`; they stay across passes (an idle
    /// registry keeps them until it starts runs again or shuts down).
    private var ended: [RunTask] = []
    /// A pass is posted to the loop for this turn.
    private var isPosted = false
    /// Inside a pass, and whether a start was queued during it that the loop refused to post
    /// (it is shutting down): the pass then goes round again.
    private(set) var isRunning = false
    private var runsAgain = false

    /// Ended tasks kept, for tests.
    var endedCount: Int { ended.count }

    /// Queues `record` to start in the next round.
    @inline(__always)
    mutating func queue(_ record: AnyTaskRecord) { queued.append(record) }

    /// Marks a pass posted for this turn: false when one already is.
    @inline(__always)
    mutating func post() -> Bool {
        guard !isPosted else { return false }
        isPosted = true
        return true
    }

    /// A start was queued inside a pass and the loop refused to post another: this pass goes
    /// round again.
    mutating func runAgain() { runsAgain = true }

    /// A pass begins.
    mutating func begin() { isRunning = true }

    /// A round of the pass begins with the records queued so far.
    @inline(__always)
    mutating func beginRound() {
        runsAgain = false
        isPosted = false
        swap(&queued, &starting)
        next = 0
    }

    /// The next record of this round to start, releasing one ended task first (the memory of
    /// a task that ended is freed just before a new one is made, so that malloc hands the same
    /// chunks back from its per-thread cache), or nil once the round is done.
    @inline(__always)
    mutating func nextToStart() -> AnyTaskRecord? {
        guard next < starting.count else {
            starting.removeAll(keepingCapacity: true)
            return nil
        }
        if !ended.isEmpty { ended.removeLast() }
        next += 1
        return starting[next - 1]
    }

    /// The round is over: whether the pass goes round again (and, if not, it ends).
    @inline(__always)
    mutating func endRound() -> Bool {
        if runsAgain { return true }
        isRunning = false
        return false
    }

    /// Keeps the task of a run that ended instead of releasing it now: released in a row, a
    /// turn's ended tasks free hundreds of chunks, more than glibc's per-thread cache holds (7 a
    /// size), and the next pass's tasks then take malloc's slow path (about 980 instructions a
    /// W1 change). Released at once past `endedTasksKept`.
    @inline(__always)
    mutating func keepEnded(_ task: RunTask) {
        if ended.count < Self.endedTasksKept { ended.append(task) }
    }

    /// Releases the ended tasks kept (shutdown).
    mutating func releaseEnded() { ended = [] }
}
