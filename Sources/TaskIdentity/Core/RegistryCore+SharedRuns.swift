import TaskLoopCore

/// Which shared run a slot may join: the template's action and the identity.
struct SharedRunKey: Hashable {
    let action: ObjectIdentifier
    let identity: AnyHashable
}

/// One run of a template that shares runs (`sharesRuns: true`), serving every slot of that
/// template that declared an equal identity while it ran. Its Swift task runs the action with
/// the first slot's context (`leader`); the slots joined since hold no task of their own. The
/// task is cancelled only once every slot has left (moved on, removed, cancelled, timed out);
/// its end ends the run of every slot still in it, and is the end the slots that left wait for.
/// Loop thread only.
final class SharedRun {
    let key: SharedRunKey
    let leader: RunKey
    /// The leader's declared priority, which its task starts at: a slot joining above it
    /// raises the task.
    let priority: UInt8
    /// The leader's task.
    var task: RunTask?
    /// The slots in the run now (the leader included while it stays), in order of joining.
    var members: [(record: AnyTaskRecord, generation: UInt64)]
    /// Slots that left: their cancelled runs end when the task does.
    var departed: [(record: AnyTaskRecord, generation: UInt64)] = []

    init(key: SharedRunKey, leader record: AnyTaskRecord, generation: UInt64) {
        self.key = key
        leader = RunKey(record: record, generation: generation)
        priority = record.options.values.priority
        members = [(record, generation)]
    }
}

// Shared runs: joining a run of an equal identity, leaving it, and its end for every slot.
extension RegistryCore {
    /// Starts the run `generation` of `record`, whose template shares runs: it joins a run of
    /// the same action and an equal identity under way, or starts one that others may join.
    func startShared(_ record: AnyTaskRecord, generation: UInt64, _ action: any KeyedTaskAction) {
        record.state.runIsShared()
        let key = SharedRunKey(action: ObjectIdentifier(action), identity: AnyHashable(record.identity))
        if let run = sharedRuns.run(for: key) {
            run.members.append((record, generation))
            record.makeRare().sharedRuns.append((generation, run))
            // A slot of a higher priority waits for this run now: the run is raised to it.
            let priority = queuePriority(of: record)
            if priority > run.priority { raise(run.task, to: priority) }
            tally { $0.joined &+= 1 }
            if trace != nil { trace(record, generation, .joinedRun) }
            pushProgressEntry(record, generation: generation)
            return
        }
        startKeyedTask(record, generation: generation, action)
        let run = SharedRun(key: key, leader: record, generation: generation)
        run.task = record.runningTask
        record.runningTask = nil
        sharedRuns.insert(run)
        record.makeRare().sharedRuns.append((generation, run))
        noteSharedRunStarted(record, generation: generation)
    }

    /// The shared run under way that `record`'s pending generation would join, if any.
    func sharedRunToJoin(_ record: AnyTaskRecord) -> SharedRun? {
        guard !sharedRuns.isEmpty, case .keyedTask(let action)? = record.pendingAction,
            !(record.identity is NoIdentity)
        else { return nil }
        let key = SharedRunKey(action: ObjectIdentifier(action), identity: AnyHashable(record.identity))
        return sharedRuns.run(for: key)
    }

    /// The run `generation` of `record` was cancelled for `reason`: if it is in a shared run,
    /// it leaves it, and the last slot to leave cancels the task, for its own reason.
    func leaveSharedRun(_ record: AnyTaskRecord, generation: UInt64, reason: CancellationReason) {
        guard let run = record.rare?.sharedRun(of: generation),
            let index = run.members.firstIndex(where: { $0.record === record && $0.generation == generation })
        else { return }
        run.departed.append(run.members.remove(at: index))
        guard run.members.isEmpty else { return }
        // No slot is served: the run is cancelled, and no slot joins it any more.
        sharedRuns.remove(run)
        // Noted before the task hears of it, so that the action reads why: the reason, then
        // the word of the slot leaving (the leader's, when it leaves last), which `carryOut`
        // clears only after this.
        runNotes.update(run.leader) { $0.reason = reason }
        record.runWord.store(0, ordering: .releasing)
        run.task?.cancel()
        run.task = nil
    }

    /// The shared run whose leader's run `generation` of `record` just ended, if it is one:
    /// taken out of the tables, so that every slot it served ends once (`runEnded`).
    func endingSharedRun(_ record: AnyTaskRecord, generation: UInt64) -> SharedRun? {
        let runKey = RunKey(record: record, generation: generation)
        guard let rare = record.rare, !rare.sharedRuns.isEmpty, let run = rare.sharedRun(of: generation),
            run.leader == runKey
        else { return nil }
        sharedRuns.remove(run)
        for member in run.members + run.departed {
            member.record.rare?.leaveSharedRun(of: member.generation)
        }
        return run
    }

    /// Whether the shared run that `record`'s run `generation` belongs to still serves a
    /// current slot (a commit of it lands). For a leader that moved on, while others stay.
    func sharedRunIsCurrent(_ record: AnyTaskRecord, generation: UInt64) -> Bool {
        guard let run = record.rare?.sharedRun(of: generation) else { return false }
        return run.members.contains { $0.record.state.isCurrentRun($0.generation) }
    }

    /// Stores `result` for the run `generation` of `record`: in every slot a shared run serves
    /// now, or in `record` alone.
    func storeResult(_ result: any Sendable, of record: AnyTaskRecord, generation: UInt64) {
        guard let run = record.rare?.sharedRun(of: generation) else {
            record.storeOwnResult(result)
            return
        }
        for member in run.members where member.record.state.isCurrentRun(member.generation) {
            member.record.storeOwnResult(result)
        }
    }

    /// The slots the run `generation` of `record` serves now: the current members of its shared
    /// run, or `record` alone while it is current.
    func servedRecords(_ record: AnyTaskRecord, generation: UInt64) -> [AnyTaskRecord] {
        if let run = record.rare?.sharedRun(of: generation) {
            return run.members.filter { $0.record.state.isCurrentRun($0.generation) }.map(\.record)
        }
        return record.state.isCurrentRun(generation) ? [record] : []
    }
}
