import Synchronization
import TaskLoopCore

/// What a run's context reads of it from any thread (`TaskContext.cancellationReason` and
/// `deadline`), while the run executes. Two parts:
///
/// - each record's `runWord`, an atomic in the padding of the record (no bigger a record),
///   says whether its run of a generation is current, and whether it ended on its own;
/// - this table holds, until the run ends, the reason of a run cancelled for anything but a new
///   identity, whether it is a shared run, and its time limit's deadline. A run that is not
///   current and has no reason here was cancelled for a new identity: the cancellation of
///   every W1 change pays two stores to the word, no lock and no bigger a context.
///
/// The table is written on the loop thread only, before the run's action can need it (a
/// reason before the task is cancelled, a deadline before the action starts), and read on any
/// thread (a reason after the word: the word's release and acquire order them). A class, held
/// by the core as a `let`: a reader off the loop touches the table alone, never `count`.
final class RunNotes {
    /// What the table holds for one run.
    struct Note {
        /// Why it was cancelled, if for anything but a new identity.
        var reason: CancellationReason?
        /// A shared run (`sharesRuns: true`), whose leader's word does not speak for it: it is
        /// cancelled only when its last slot leaves.
        var isShared = false
        /// Its time limit's deadline, in the loop clock's nanoseconds; 0 for none.
        var deadline: UInt64 = 0
    }

    // Locked: a pthread mutex, which ThreadSanitizer sees; read from actions on any thread.
    private let table = Locked<[RunKey: Note]>([:])
    /// How many notes the table holds. Loop thread only: a run's end looks at it before taking
    /// the lock.
    private(set) var count = 0

    /// Changes the note of `run` (made empty if it has none). Loop thread only.
    func update(_ run: RunKey, _ change: (inout Note) -> Void) {
        let added = table.withLock { table in
            let added = table[run] == nil
            change(&table[run, default: Note()])
            return added
        }
        if added { count &+= 1 }
    }

    /// Forgets the note of `run`, which ended. Loop thread only.
    func remove(_ run: RunKey) {
        guard count != 0 else { return }
        let removed = table.withLock { $0.removeValue(forKey: run) != nil }
        if removed { count &-= 1 }
    }

    /// The note of `run`, if it has one. Any thread.
    func note(for run: RunKey) -> Note? { table.withLock { $0[run] } }
}

// The record's side: its word, and the reason read from any thread.
extension AnyTaskRecord {
    /// The word of a current run of `generation`: its low 14 bits, and the top bit set; 0 means
    /// cancelled. (A run still executing 16,384 generations after it was cancelled, with the
    /// current one's low bits equal to its own, would read as current: no realistic workload
    /// comes near.)
    @inline(__always)
    static func currentRunWord(_ generation: UInt64) -> UInt16 {
        0x8000 | UInt16(truncatingIfNeeded: generation) & 0x3FFF
    }

    /// The word of a run of `generation` that ended on its own while current (not cancelled):
    /// its low 14 bits and the next bit set, so never 0.
    @inline(__always)
    static func endedRunWord(_ generation: UInt64) -> UInt16 {
        0x4000 | UInt16(truncatingIfNeeded: generation) & 0x3FFF
    }

    /// The run `generation` starts (a new generation, or an attempt after a failure). Loop thread.
    @inline(__always)
    final func noteRunStarted(_ generation: UInt64) {
        runWord.store(Self.currentRunWord(generation), ordering: .releasing)
    }

    /// The current run `generation` ended on its own (returned or threw). Loop thread.
    @inline(__always)
    final func noteRunEndedCurrent(_ generation: UInt64) {
        runWord.store(Self.endedRunWord(generation), ordering: .releasing)
    }

    /// Why the run `generation` of this record was cancelled, or `nil` while it is not. Any
    /// thread. Read after the run has ended, the answer may say `identityChanged` for a run that
    /// was cancelled for another reason: the note goes with the run.
    final func cancellationReason(of generation: UInt64) -> CancellationReason? {
        let word = runWord.load(ordering: .acquiring)
        if word == Self.currentRunWord(generation) || word == Self.endedRunWord(generation) { return nil }
        guard let note = core.runNotes.note(for: RunKey(record: self, generation: generation)) else {
            return .identityChanged
        }
        if let reason = note.reason { return reason }
        return note.isShared ? nil : .identityChanged
    }

    /// The deadline of the run `generation`'s time limit, in the loop clock's nanoseconds, or
    /// 0 for none. Any thread.
    final func deadline(of generation: UInt64) -> UInt64 {
        core.runNotes.note(for: RunKey(record: self, generation: generation))?.deadline ?? 0
    }
}

// The core's side: noting each cancellation before the run's task hears of it.
extension RegistryCore {
    /// `carryOut`'s part for a run cancelled other than a task's for a new identity (which
    /// `carryOut` does inline): the reason is noted, then the word stops saying current, then
    /// the run's task is cancelled (a reader consults the table only once the word says so).
    /// A slot leaving a shared run notes no reason: the shared run is cancelled only when its
    /// last slot leaves, for that slot's reason, by `leaveSharedRun` (which clears the leaving
    /// slot's word itself first). Out of line: rare.
    @inline(never)
    func noteCancelled(_ effects: TaskStateMachine.Effects, on record: AnyTaskRecord) {
        if effects.cancelled != .sharedRun, let change = effects.endedRun, case .cancelled(let reason) = change.phase,
            reason != .identityChanged
        {
            runNotes.update(RunKey(record: record, generation: change.generation)) { $0.reason = reason }
        }
        record.runWord.store(0, ordering: .releasing)
        if effects.cancelled == .taskForAReason {
            record.runningTask?.cancel()
            record.runningTask = nil
        }
    }

    /// A shared run starts with `record`'s run `generation` as its leader: noted as under way.
    func noteSharedRunStarted(_ record: AnyTaskRecord, generation: UInt64) {
        runNotes.update(RunKey(record: record, generation: generation)) { $0.isShared = true }
    }
}
