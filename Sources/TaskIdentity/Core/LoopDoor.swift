import TaskLoopCore

/// A registry core's way onto its loop thread for code running elsewhere: an actor whose
/// executor is the loop's serial executor, so that its methods run on the loop thread, whatever
/// executor the caller is on. Runs whose actions run off the loop end through it, and
/// `TaskContext.commitOnLoop` commits through it. After the loop's shutdown its jobs run on the
/// enqueuing thread one at a time (the loop's trampoline), still one after another.
///
/// May be called from any task.
@usableFromInline
actor LoopDoor {
    private let executor: UnownedSerialExecutor

    /// Runs this actor's jobs on `loop`'s thread. The loop must outlive the door: its core
    /// holds both.
    init(loop: any TaskLoop) {
        // Through the package's own face where the loop has one: reading the public `executor`
        // would make the loop's executor reach it weakly, a cost on every retain of the loop.
        executor = (loop as? any LoopJobSink)?.unownedSerialExecutor ?? loop.executor.asUnownedSerialExecutor()
    }

    @usableFromInline nonisolated var unownedExecutor: UnownedSerialExecutor { executor }

    /// Runs `body` on the loop thread and returns its result.
    @usableFromInline func run<Result: Sendable>(_ body: @Sendable () throws -> Result) rethrows -> Result {
        try body()
    }
}
