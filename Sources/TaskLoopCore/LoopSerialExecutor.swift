/// The serial-executor face of a loop: the `executor` that a loop hands to actors, so that their
/// jobs arrive apart from the jobs of tasks that prefer the loop. The loop keeps it for its whole
/// life (actors hold their executor unowned, so it must live as long as the loop).
///
/// It may outlive its loop: `loop.executor` hands it out strongly, and a caller may keep it (or
/// an actor pinned to it) after the loop is gone. It holds its loop weakly, so it never reaches
/// freed memory, and a job enqueued after the loop was released runs the way a loop that has
/// shut down runs it: at once on the enqueuing thread, one job at a time, in order, never lost
/// (Swift requires every enqueued job to run).
///
/// Unchecked `Sendable`: `loop` is a weak reference written only in `init` (the runtime loads
/// weak references atomically), and the rest is behind `orphanQueue`'s lock.
package final class LoopSerialExecutor<Loop: TaskLoop & LoopJobSink>: SerialExecutor, @unchecked Sendable {
    // weak, not unowned(unsafe): an executor kept past its loop must not read freed memory.
    // It costs an atomic load per actor job; the registry's runs arrive through the loop's
    // task-executor face and never pay it.
    private weak var loop: Loop?
    /// Jobs enqueued after the loop was released, and which thread runs them now.
    private let orphanQueue = Locked(OrphanQueue())

    private struct OrphanQueue {
        var jobs: [UnownedJob] = []
        /// The thread draining `jobs` (`currentThreadID()`), or 0 when none is.
        var runner: UInt = 0
    }

    package init(loop: Loop) { self.loop = loop }

    package func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        let job = UnownedJob(job)
        guard let loop else { return runOrphaned(job) }
        loop.enqueue(.serialJob(job), priority: priority)
    }

    package func checkIsolated() {
        precondition(
            isIsolatingCurrentContext() == true,
            "BUG DETECTED: called off the thread of \(loop.map { "\($0)" } ?? "a released loop's executor")")
    }

    package func isIsolatingCurrentContext() -> Bool? {
        if let loop { return loop.inLoop }
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
