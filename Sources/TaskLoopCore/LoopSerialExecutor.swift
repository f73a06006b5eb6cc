import Synchronization

/// The serial-executor face of a loop: the `executor` that a loop hands to actors, so that their
/// jobs arrive apart from the jobs of tasks that prefer the loop. The loop keeps it for its whole
/// life (actors hold their executor unowned, so it must live as long as the loop).
///
/// It may outlive its loop: `loop.executor` hands it out strongly, and a caller may keep it (or
/// an actor pinned to it) after the loop is gone. A job enqueued once the loop has been
/// released runs the way a loop that has shut down runs it: at once on the enqueuing thread, one
/// job at a time, in order, never lost (Swift requires every enqueued job to run).
///
/// How it reaches its loop, in two modes:
/// - Until the loop's `executor` is first read, only the package reaches this executor (the
///   registry's `LoopDoor`, through `unownedSerialExecutor`, from a core that holds the loop),
///   so the loop outlives every use: an unretained reference, no cost per job.
/// - From the first read of `executor` on, anyone may keep it past the loop: it reaches the loop
///   through a weak reference, which is never read after the loop is gone and never races its
///   release (a weak load retains the loop or finds it gone, atomically). A weak reference gives
///   the loop a side table, so that every retain and release of the loop takes the runtime's slow
///   path (+690 instructions per W1 change, measured): only loops whose executor is handed out
///   pay it, never a registry's alone.
///
/// Unchecked `Sendable`: `loop` is immutable, `publicLoop` is written once before
/// `handedOut` is raised (release) and read after it is seen (acquire), the weak reference
/// itself is loaded atomically by the runtime, and the rest is behind `orphanQueue`'s lock.
package final class LoopSerialExecutor<Loop: TaskLoop & LoopJobSink>: SerialExecutor, @unchecked Sendable {
    // unowned(unsafe): read only while the executor has not been handed out, when only code of
    // this package that holds the loop reaches the executor (above), or before the loop's
    // deinit raises `loopIsGone`.
    private unowned(unsafe) let loop: Loop
    /// Raised by the first read of the loop's `executor` (`handOut()`).
    private let handedOut = Atomic<Bool>(false)
    /// The loop, weakly, from the first hand-out on.
    private weak var publicLoop: Loop?
    /// Raised by the loop's deinit (`loopDeinitialising(leftovers:)`).
    private let loopIsGone = Atomic<Bool>(false)
    /// Jobs enqueued after the loop was released, and which thread runs them now.
    private let orphanQueue = Locked(OrphanQueue())

    private struct OrphanQueue {
        var jobs: [UnownedJob] = []
        /// The thread draining `jobs` (`currentThreadID()`), or 0 when none is.
        var runner: UInt = 0
    }

    package init(loop: Loop) { self.loop = loop }

    /// The executor as the loop's public `executor` hands it out: from now on it reaches the
    /// loop weakly. May be called from any thread.
    package func handOut() -> Self {
        if !handedOut.load(ordering: .acquiring) {
            orphanQueue.withLock { _ in
                if !handedOut.load(ordering: .relaxed) {
                    publicLoop = loop
                    handedOut.store(true, ordering: .releasing)
                }
            }
        }
        return self
    }

    /// Called first thing by the loop's deinit, with the actors' jobs still queued on it (a loop
    /// that never started, a test loop dropped without shutdown): they run now, as orphans, and
    /// from now on nothing reaches the loop.
    package func loopDeinitialising(leftovers: [UnownedJob]) {
        loopIsGone.store(true, ordering: .releasing)
        for job in leftovers { runOrphaned(job) }
    }

    /// The loop, if it is still there to take jobs; `nil` once it is gone.
    @inline(__always)
    private func reachableLoop() -> Loop? {
        if loopIsGone.load(ordering: .acquiring) { return nil }
        if handedOut.load(ordering: .acquiring) { return publicLoop }
        return loop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        let job = UnownedJob(job)
        guard let loop = reachableLoop() else { return runOrphaned(job) }
        loop.enqueue(.serialJob(job), priority: priority)
    }

    package func checkIsolated() {
        precondition(isIsolatingCurrentContext() == true, "BUG DETECTED: called off the thread of \(self)")
    }

    package func isIsolatingCurrentContext() -> Bool? {
        if let loop = reachableLoop() { return loop.inLoop }
        let thread = currentThreadID()
        return orphanQueue.withLock { $0.runner == thread }
    }

    /// Runs `job` isolated to this executor on the calling thread, after the orphaned jobs
    /// before it; if another thread is draining them already, leaves it to that thread.
    private func runOrphaned(_ job: UnownedJob) {
        let thread = currentThreadID()
        let mustDrain = orphanQueue.withLock { queue -> Bool in
            queue.jobs.append(job)
            guard queue.runner == 0 else { return false }
            queue.runner = thread
            return true
        }
        guard mustDrain else { return }
        while let next = orphanQueue.withLock({ queue -> UnownedJob? in
            if queue.jobs.isEmpty {
                queue.runner = 0
                return nil
            }
            return queue.jobs.removeFirst()
        }) {
            next.runSynchronously(on: asUnownedSerialExecutor())
        }
    }
}
