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
/// Unchecked `Sendable`: `loop` is an immutable (safe) unowned reference, `loopIsGone` atomic,
/// and the rest is behind `orphanQueue`'s lock.
package final class LoopSerialExecutor<Loop: TaskLoop & LoopJobSink>: SerialExecutor, @unchecked Sendable {
    // unowned (safe), neither strong (a cycle: the loop owns its executor) nor weak (a weak
    // reference gives the loop a side table, and every retain and release of the loop, one per
    // run's task, then takes the runtime's slow path: +690 instructions per W1 change). The
    // loop's deinit raises `loopIsGone` before anything else, so a job enqueued after it never
    // loads the reference; one enqueued on another thread at the very moment the last reference
    // to the loop goes traps in the runtime's check instead of reading freed memory.
    private unowned let loop: Loop
    /// Raised by the loop's deinit (`loopDeinitialising()`).
    private let loopIsGone = Atomic<Bool>(false)
    /// Jobs enqueued after the loop was released, and which thread runs them now.
    private let orphanQueue = Locked(OrphanQueue())

    private struct OrphanQueue {
        var jobs: [UnownedJob] = []
        /// The thread draining `jobs` (`currentThreadID()`), or 0 when none is.
        var runner: UInt = 0
    }

    package init(loop: Loop) { self.loop = loop }

    /// Called first thing by the loop's deinit: from now on nothing reaches the loop.
    package func loopDeinitialising() { loopIsGone.store(true, ordering: .releasing) }

    package func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        let job = UnownedJob(job)
        if loopIsGone.load(ordering: .acquiring) { return runOrphaned(job) }
        loop.enqueue(.serialJob(job), priority: priority)
    }

    package func checkIsolated() {
        precondition(isIsolatingCurrentContext() == true, "BUG DETECTED: called off the thread of \(self)")
    }

    package func isIsolatingCurrentContext() -> Bool? {
        if !loopIsGone.load(ordering: .acquiring) { return loop.inLoop }
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
