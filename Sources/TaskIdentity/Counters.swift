/// The registry's counters. Every declaration that creates a generation ends in exactly one of
/// `finished`, `failed`, `cancelled` and `coalesced`, or is still live, so that
/// `declared == unchanged + finished + failed + cancelled + coalesced + liveGenerations`.
///
/// A value type; may be used on any thread.
public struct RegistryCounters: Hashable, Sendable, CustomStringConvertible {
    /// All zeros. May be called from any thread.
    public init() {}

    /// Calls to `task(…)` that reached the registry.
    public var declared: UInt64 = 0
    /// Declarations whose id equalled the current one (nothing happened).
    public var unchanged: UInt64 = 0
    /// Actions started (each is one Swift task, or one synchronous run).
    public var started: UInt64 = 0
    /// Actions started for a new id of a task that had run before.
    public var restarted: UInt64 = 0
    /// Identities replaced before they started (debounced, throttled or superseded by policy).
    public var coalesced: UInt64 = 0
    /// Runs, started or waiting, that ended cancelled.
    public var cancelled: UInt64 = 0
    /// Runs that finished while current.
    public var finished: UInt64 = 0
    /// Runs that failed while current.
    public var failed: UInt64 = 0
    /// `commit { }` calls dropped because their run was no longer current.
    public var staleCommitsDropped: UInt64 = 0
    /// Evaluations of observed identities (`task(_:tracking:…)`): one per declaration, and one
    /// per batch of changes to the state an identity read (every write in a loop turn
    /// coalesces into one). Each also counts as a declaration.
    public var identityEvaluations: UInt64 = 0
    /// Chains of observed runs stopped as cycles (see `ObservationCycleError`).
    public var observationCyclesStopped: UInt64 = 0
    /// Slots that exist now.
    public var liveSlots: Int = 0
    /// Actions that have not ended yet: Swift tasks (cancelled ones included) and synchronous
    /// runs waiting out their delay or inside their action.
    public var runningActions: Int = 0
    /// Generations declared and not yet ended: waiting, or running as the current run.
    public var liveGenerations: Int = 0

    /// `declared=… started=… …` in one line.
    public var description: String {
        "declared=\(declared) unchanged=\(unchanged) started=\(started) restarted=\(restarted) coalesced=\(coalesced) "
            + "cancelled=\(cancelled) finished=\(finished) failed=\(failed) stale_commits_dropped=\(staleCommitsDropped) "
            + "identity_evaluations=\(identityEvaluations) observation_cycles_stopped=\(observationCyclesStopped) "
            + "live_slots=\(liveSlots) running_actions=\(runningActions) live_generations=\(liveGenerations)"
    }

    /// The first invariant these counters break, if any: every generation declared is
    /// unchanged, ended (finished, failed, cancelled, coalesced) or live, and nothing live or
    /// running is negative. Checked after each event by the internal-checks build.
    func brokenInvariant() -> String? {
        if liveGenerations < 0 { return "liveGenerations < 0" }
        if runningActions < 0 { return "runningActions < 0" }
        if liveSlots < 0 { return "liveSlots < 0" }
        let accounted = unchanged &+ finished &+ failed &+ cancelled &+ coalesced &+ UInt64(liveGenerations)
        if declared != accounted {
            return "declared (\(declared)) != unchanged + finished + failed + cancelled + coalesced + liveGenerations"
                + " (\(accounted))"
        }
        if restarted > started { return "restarted > started" }
        return nil
    }

    /// The counters of two registries (or shards) added up, field by field.
    public static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        sum.declared += rhs.declared
        sum.unchanged += rhs.unchanged
        sum.started += rhs.started
        sum.restarted += rhs.restarted
        sum.coalesced += rhs.coalesced
        sum.cancelled += rhs.cancelled
        sum.finished += rhs.finished
        sum.failed += rhs.failed
        sum.staleCommitsDropped += rhs.staleCommitsDropped
        sum.identityEvaluations += rhs.identityEvaluations
        sum.observationCyclesStopped += rhs.observationCyclesStopped
        sum.liveSlots += rhs.liveSlots
        sum.runningActions += rhs.runningActions
        sum.liveGenerations += rhs.liveGenerations
        return sum
    }
}
