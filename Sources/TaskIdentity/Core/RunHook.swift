/// What an integration hears about runs from the core: the one way the core reaches the spans
/// of the runs (trait `Tracing`, `RunSpans`), so that the core names no trait. A registry with
/// no hook pays one branch at each place that would call it.
///
/// Loop thread only: every method is called on the registry's loop thread.
@usableFromInline
protocol RunHook: AnyObject {
    /// The run `generation` of `record` starts: `start` makes its task or calls its action. A
    /// hook that gives runs a context of their own binds it around `start`, so that the task
    /// takes it with its task-locals. `attempt` is the run's attempt under a retry policy.
    func runStarting(
        _ record: AnyTaskRecord, generation: UInt64, attempt: Int?, isQueuedSynchronous: Bool, start: () -> Void)

    /// The delayed synchronous run `generation` of `record` is called now (`call`), in the
    /// context its start was given.
    func synchronousRunDue(_ record: AnyTaskRecord, generation: UInt64, call: () -> Void)

    /// The run `generation` of `record` ended: its action returned (`failure` is what it threw)
    /// or, synchronous, was called. `phase` is the task's phase now, if this run was its current
    /// one.
    func runEnded(_ record: AnyTaskRecord, generation: UInt64, failure: (any Error)?, phase: TaskStateMachine.Phase?)
}
