// Priority escalation: something of a higher priority waits for a generation (a caller awaiting
// its result or its phases, a slot joining its shared run), so the generation is raised: its
// run's Swift task is escalated (SE-0462), and a generation queued at a concurrency limit moves
// to its new priority's lane.
extension RegistryCore {
    /// Raises the current generation of `record` to `priority` (a `TaskPriority.rawValue`):
    /// the run in its way (its own, or the one it waits beside), the shared run it is in, its
    /// place in its limit's queue, and every start of it from now on (a queued or debounced
    /// generation, a retry's next attempt). Lowering is never done. Loop thread only.
    func escalate(_ record: AnyTaskRecord, to priority: UInt8) {
        let generation = record.state.generation
        let rare = record.makeRare()
        if let raised = rare.raisedPriority, raised.generation == generation, raised.priority >= priority {
            // Raised this far already: only a queue place joined since may lag behind.
        } else {
            rare.raisedPriority = (generation, priority)
            startsMayBeRaised = true
        }
        raise(record.runningTask, to: priority)
        for (runGeneration, run) in rare.sharedRuns where runGeneration == generation {
            raise(run.task, to: priority)
        }
        if let link = rare.limitQueued, link.priority < priority {
            // Its wait counts from the move, as a newcomer's: each lane stays in joining order.
            rare.limitQueued = link.queue.move(link, of: record, to: priority, now: unretainedLoop.now.nanoseconds)
        }
    }

    /// Escalates `task` to `priority`.
    func raise(_ task: RunTask?, to priority: UInt8) {
        guard let task else { return }
        task.escalatePriority(to: TaskPriority(rawValue: priority))
    }

    /// The priority the pending generation of `record` waits at in a limit's queue: its
    /// declared one, or the one it was raised to.
    func queuePriority(of record: AnyTaskRecord) -> UInt8 {
        let declared = record.options.values.priority
        guard startsMayBeRaised, let raised = record.rare?.raisedPriority, raised.generation == record.state.generation
        else { return declared }
        return max(declared, raised.priority)
    }

    /// A run of a generation raised before it started (`raised`) has just started: its task
    /// starts at the declared priority, so it is escalated now (at each attempt of a retry).
    func startedRaised(_ record: AnyTaskRecord, _ raised: (generation: UInt64, priority: UInt8)) {
        guard raised.generation == record.state.generation else { return }
        raise(record.runningTask, to: raised.priority)
        guard let rare = record.rare else { return }
        for (runGeneration, run) in rare.sharedRuns where runGeneration == raised.generation {
            raise(run.task, to: raised.priority)
        }
    }
}
