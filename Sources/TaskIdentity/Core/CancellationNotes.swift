import Synchronization
import TaskLoopCore

/// Why runs that may still be executing were cancelled, for `TaskContext.cancellationReason`,
/// which any thread may read. Two parts:
///
/// - each record's `runWord`, an atomic in the padding of the record (no bigger a record),
///   says whether its run of a generation is current, and whether it ended on its own;
/// - this table holds the reason of a run cancelled for anything but a new identity, and marks
///   a shared run under way, until the run ends. A run that is not current and has no note was
///   cancelled for a new identity: the one cancellation of every W1 change pays two stores to
///   the word and no lock.
///
/// The table is written on the loop thread only, before the run's task is cancelled, and read
/// on any thread after its word (the word's release and acquire order them). A class, held by
/// the core as a `let`: a reader off the loop touches the table alone, never `count`.
final class CancellationNotes {
    /// What the table says of a run: cancelled for a reason, or a shared run still under way
    /// (`nil`), whose leader's own word does not speak for it.
    typealias Note = CancellationReason?

    // Locked: a pthread mutex, which ThreadSanitizer sees; read from actions on any thread.
    private let table = Locked<[RunKey: Note]>([:])
    /// How many notes the table holds. Loop thread only: a run's end looks at it before taking
    /// the lock.
    private(set) var count = 0

    /// Notes `note` for `run`, replacing what was there. Loop thread only.
    func set(_ note: Note, for run: RunKey) {
        let added = table.withLock { $0.updateValue(note, forKey: run) == nil }
        if added { count &+= 1 }
    }

    /// Forgets the note of `run`, which ended. Loop thread only.
    func remove(_ run: RunKey) {
        guard count != 0 else { return }
        let removed = table.withLock { $0.removeValue(forKey: run) != nil }
        if removed { count &-= 1 }
    }

    /// The note of `run`: `.none` for no note, `.some(nil)` for a shared run under way. Any
    /// thread.
    func note(for run: RunKey) -> Note? { table.withLock { $0[run] } }
}

// The record's side: its word, and the reason read from any thread.
extension AnyTaskRecord {
    /// The word of a current run of `generation`: its low 15 bits, and the top bit set. (A run
    /// still executing 32,768 generations after it was cancelled, with the current one's low
    /// bits equal to its own, would read as current: no realistic workload comes near.)
    @inline(__always)
    static func currentRunWord(_ generation: UInt64) -> UInt16 {
        0x8000 | UInt16(truncatingIfNeeded: generation) & 0x7FFF
    }

    /// The word of a run of `generation` that ended on its own while current (not cancelled).
    @inline(__always)
    static func endedRunWord(_ generation: UInt64) -> UInt16 { UInt16(truncatingIfNeeded: generation) & 0x7FFF }

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
        switch core.cancellationNotes.note(for: RunKey(record: self, generation: generation)) {
        case .none: return .identityChanged
        case .some(let reason): return reason
        }
    }
}

// The core's side: noting each cancellation before the run's task hears of it.
extension RegistryCore {
    /// `carryOut`'s part for a cancelled run: its word stops saying current, and a reason
    /// other than a new identity is noted. A slot leaving a shared run notes nothing: the
    /// shared run is cancelled only when its last slot leaves (`leaveSharedRun`).
    @inline(__always)
    func noteCancelled(_ record: AnyTaskRecord, _ change: TaskStateMachine.PhaseChange, shared: Bool) {
        guard case .cancelled(let reason) = change.phase else { return }
        record.runWord.store(0, ordering: .releasing)
        if reason != .identityChanged && !shared { noteReason(reason, of: record, generation: change.generation) }
    }

    /// Notes `reason` for the run `generation` of `record` (out of line: rare).
    @inline(never)
    func noteReason(_ reason: CancellationReason, of record: AnyTaskRecord, generation: UInt64) {
        cancellationNotes.set(reason, for: RunKey(record: record, generation: generation))
    }

    /// A shared run starts with `record`'s run `generation` as its leader: noted as under way.
    func noteSharedRunStarted(_ record: AnyTaskRecord, generation: UInt64) {
        cancellationNotes.set(Optional<CancellationReason>.none, for: RunKey(record: record, generation: generation))
    }
}
