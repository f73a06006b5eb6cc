/// One unit of work for a loop: a job given by the Swift runtime (stored as is, no closure
/// allocated around it) or a closure from `execute`.
///
/// Jobs keep the role they were enqueued in. A job of an actor pinned to the loop arrives
/// through the loop's serial-executor face and runs isolated to it; a job of a task preferring
/// the loop arrives through the loop itself (its task-executor face) and runs with no serial
/// isolation, so that the task's non-isolated code does not hop off an isolation it never asked
/// for (each such hop costs one more job per task).
@usableFromInline
package enum LoopWork {
    case serialJob(UnownedJob)
    case taskJob(UnownedJob)
    case closure(() -> Void)
}

extension LoopWork {
    /// The job of an actor pinned to the loop, if this is one.
    package var serialJob: UnownedJob? {
        if case .serialJob(let job) = self { return job }
        return nil
    }

    /// Runs the work on the calling thread, which must be `loop`'s: a serial job isolated to
    /// the loop's serial face, a task job on its task-executor face, a closure as it is.
    @inline(__always)
    @inlinable
    package func run(on loop: some TaskLoop & LoopJobSink) {
        switch self {
        case .serialJob(let job): job.runSynchronously(on: loop.unownedSerialExecutor)
        case .taskJob(let job): job.runSynchronously(on: loop.asUnownedTaskExecutor())
        case .closure(let closure): closure()
        }
    }
}

/// The priority that `execute` closures run at: medium, between tasks of high and low priority.
@usableFromInline
package let closurePriority: UInt8 = TaskPriority.medium.rawValue
