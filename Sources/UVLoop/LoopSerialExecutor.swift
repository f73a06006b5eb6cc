/// The serial-executor face of a loop: the `executor` that a loop hands to
/// actors, so that their jobs arrive apart from the jobs of tasks that prefer the loop.
/// Owned by its loop; actors hold executors unowned, as they do any serial executor.
///
/// Unchecked `Sendable`: its one stored property is the immutable loop reference below.
final class LoopSerialExecutor<Loop: TaskLoop & LoopJobSink>: SerialExecutor, @unchecked Sendable {
    // unowned(unsafe): no refcount traffic per job. Sound only while the loop lives: the loop
    // owns this executor, but `loop.executor` also hands it out strongly, and a caller that
    // keeps it past the loop's release and enqueues on it reads freed memory. Nothing enforces
    // "use a loop's executor only while the loop lives" (docs/safety.md).
    unowned(unsafe) let loop: Loop

    init(loop: Loop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        loop.enqueue(.serialJob(UnownedJob(job)), priority: priority)
    }

    func checkIsolated() { loop.preconditionInLoop() }

    func isIsolatingCurrentContext() -> Bool? { loop.inLoop }
}
