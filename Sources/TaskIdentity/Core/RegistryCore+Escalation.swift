// Priority escalation: something of a higher priority waits for a generation (a caller awaiting
// its result or its phases, a slot joining its shared run), so the generation is raised: its
// run's Swift task is escalated (SE-0462), and a generation queued at a concurrency limit moves
// to its new priority's lane.
extension RegistryCore {
    /// Raises the current generation of `record` to `priority` (a `TaskPriority.rawValue`):
    /// its run's task, the shared run it is in, or its place in its limit's queue. Lowering is
    /// never done. Loop thread only.
    func escalate(_ record: AnyTaskRecord, to priority: UInt8) {
        let generation = record.state.generation
        raise(record.runningTask, to: priority)
        if record.state.pending != .none {
            // Not started yet (a window, a limit's queue, a previous run to wait for): its task
            // is escalated when it starts.
            let rare = record.makeRare()
            if let raised = rare.raisedPriority, raised.generation == generation, raised.priority >= priority { return }
            rare.raisedPriority = (generation, priority)
            startsMayBeRaised = true
            if let link = rare.limitQueued, link.priority < priority {
                rare.limitQueued = link.queue.move(link, of: record, to: priority, now: unretainedLoop.now.nanoseconds)
            }
            return
        }
        guard let rare = record.rare else { return }
        for (runGeneration, run) in rare.sharedRuns where runGeneration == generation {
            raise(run.task, to: priority)
        }
    }

    /// Escalates `task` to `priority`, if it runs below it.
    func raise(_ task: RunTask?, to priority: UInt8) {
        guard let task else { return }
        task.escalatePriority(to: TaskPriority(rawValue: priority))
    }

    /// A generation raised before it started (`raised`) has just started: its task starts at
    /// the declared priority, so it is escalated now.
    func startedRaised(_ record: AnyTaskRecord, _ raised: (generation: UInt64, priority: UInt8)) {
        guard let rare = record.rare else { return }
        rare.raisedPriority = nil
        guard raised.generation == record.state.generation else { return }
        escalate(record, to: raised.priority)
    }
}
