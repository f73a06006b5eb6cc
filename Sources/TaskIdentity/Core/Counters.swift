/// The registry's counters. Every declaration that creates a generation ends in exactly one of
/// `finished`, `failed`, `cancelled` and `coalesced`, or is still live, and one that creates
/// none is `unchanged` or `dropped`, so that `declared == unchanged + dropped + finished +
/// failed + cancelled + coalesced + liveGenerations`.
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
    /// Runs cancelled because their time limit (`timeout:`) passed; each is also counted in
    /// `cancelled`.
    public var timedOut: UInt64 = 0
    /// Failed runs that waited to be tried again (`RetryPolicy`), whether or not a new identity
    /// or a removal ended the wait: each attempt after the first is also counted in `started`
    /// (not in `restarted`), and only a generation's last failure in `failed`.
    public var retries: UInt64 = 0
    /// Runs that joined another slot's run of an equal identity (a template that shares runs)
    /// instead of starting an action of their own; each is also counted in `started`.
    public var joined: UInt64 = 0
    /// Generations that waited in a concurrency limit's queue (`ConcurrencyLimit`) because
    /// its runs were all taken when they would have started.
    public var queued: UInt64 = 0
    /// Nanoseconds of loop time that the runs started from a concurrency limit's queue spent
    /// there, added up: divided by the runs started from a queue, the mean wait. Each run's
    /// wait counts from when its generation joined the queue (a new identity joins anew).
    public var queueWaitNanoseconds: UInt64 = 0
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
    /// Generations waiting in a concurrency limit's queue now.
    public var queueLength: Int = 0
    /// Declarations of a new identity dropped by their policy (`keepRunningDropNew`, while a
    /// run is under way or a generation waits): no generation, nothing changed.
    public var dropped: UInt64 = 0
    /// Generations shed from a full concurrency limit's queue (`ConcurrencyLimit(maxQueued:)`):
    /// they never ran, and ended `cancelled(.shed)`; each is also counted in `cancelled`.
    public var shed: UInt64 = 0

    /// `declared=… started=… …` in one line, in the order and with the names of `fields`.
    public var description: String {
        Self.fields.map { "\($0.name)=\($0.value(self))" }.joined(separator: " ")
    }

    /// One counter as data: its snake_case name (INFO's field, the metric's name after a
    /// prefix), its kind, and how to read it. The one list that `description`, `+`, the
    /// server's INFO and the metrics export all follow.
    ///
    /// A value type; may be used on any thread.
    public struct Field: Sendable {
        /// Whether the value only grows (a counter) or goes up and down (a gauge).
        public enum Kind: Sendable {
            /// Only grows over the registry's life.
            case counter
            /// Goes up and down: a level, such as the live slots.
            case gauge
        }

        /// The snake_case name, such as `stale_commits_dropped`.
        public let name: String
        /// Counter or gauge.
        public let kind: Kind
        let keyPath: WritableKeyPath<RegistryCounters, Int64Convertible> & Sendable

        /// The value of this field in `counters`, as a signed 64-bit number.
        ///
        /// May be called from any thread.
        public func value(_ counters: RegistryCounters) -> Int64 { counters[keyPath: keyPath].int64 }
    }

    /// Every counter, in a stable order: the counters first, then the gauges.
    public static let fields: [Field] = [
        Field(name: "declared", kind: .counter, keyPath: \.declaredField),
        Field(name: "unchanged", kind: .counter, keyPath: \.unchangedField),
        Field(name: "started", kind: .counter, keyPath: \.startedField),
        Field(name: "restarted", kind: .counter, keyPath: \.restartedField),
        Field(name: "coalesced", kind: .counter, keyPath: \.coalescedField),
        Field(name: "cancelled", kind: .counter, keyPath: \.cancelledField),
        Field(name: "finished", kind: .counter, keyPath: \.finishedField),
        Field(name: "failed", kind: .counter, keyPath: \.failedField),
        Field(name: "timed_out", kind: .counter, keyPath: \.timedOutField),
        Field(name: "stale_commits_dropped", kind: .counter, keyPath: \.staleCommitsDroppedField),
        Field(name: "identity_evaluations", kind: .counter, keyPath: \.identityEvaluationsField),
        Field(name: "observation_cycles_stopped", kind: .counter, keyPath: \.observationCyclesStoppedField),
        // Added later, after the counters before them, so that the order stays stable.
        Field(name: "retries", kind: .counter, keyPath: \.retriesField),
        Field(name: "joined", kind: .counter, keyPath: \.joinedField),
        Field(name: "queued", kind: .counter, keyPath: \.queuedField),
        Field(name: "queue_wait_ns", kind: .counter, keyPath: \.queueWaitNanosecondsField),
        Field(name: "dropped", kind: .counter, keyPath: \.droppedField),
        Field(name: "shed", kind: .counter, keyPath: \.shedField),
        Field(name: "live_slots", kind: .gauge, keyPath: \.liveSlotsField),
        Field(name: "running_actions", kind: .gauge, keyPath: \.runningActionsField),
        Field(name: "live_generations", kind: .gauge, keyPath: \.liveGenerationsField),
        Field(name: "queue_length", kind: .gauge, keyPath: \.queueLengthField),
    ]

    /// The first invariant these counters break, if any: every generation declared is
    /// unchanged, ended (finished, failed, cancelled, coalesced) or live, and nothing live or
    /// running is negative. Checked after each event by the internal-checks build.
    func brokenInvariant() -> String? {
        if liveGenerations < 0 { return "liveGenerations < 0" }
        if runningActions < 0 { return "runningActions < 0" }
        if liveSlots < 0 { return "liveSlots < 0" }
        if queueLength < 0 || queueLength > liveGenerations { return "queueLength outside 0...liveGenerations" }
        let accounted =
            unchanged &+ dropped &+ finished &+ failed &+ cancelled &+ coalesced &+ UInt64(liveGenerations)
        if declared != accounted {
            return "declared (\(declared)) != unchanged + dropped + finished + failed + cancelled + coalesced"
                + " + liveGenerations (\(accounted))"
        }
        if shed > cancelled { return "shed > cancelled" }
        if restarted > started { return "restarted > started" }
        if timedOut > cancelled { return "timedOut > cancelled" }
        return nil
    }

    /// The counters of two registries (or shards) added up, field by field (every field of
    /// `fields`).
    public static func + (lhs: Self, rhs: Self) -> Self {
        var sum = lhs
        for field in fields {
            sum[keyPath: field.keyPath] = Int64Convertible(field.value(lhs) &+ field.value(rhs))
        }
        return sum
    }

    // Each stored counter seen as one type, so that one list of key paths covers them all.
    var declaredField: Int64Convertible {
        get { Int64Convertible(declared) }
        set { declared = newValue.uint64 }
    }
    var unchangedField: Int64Convertible {
        get { Int64Convertible(unchanged) }
        set { unchanged = newValue.uint64 }
    }
    var startedField: Int64Convertible {
        get { Int64Convertible(started) }
        set { started = newValue.uint64 }
    }
    var restartedField: Int64Convertible {
        get { Int64Convertible(restarted) }
        set { restarted = newValue.uint64 }
    }
    var droppedField: Int64Convertible {
        get { Int64Convertible(dropped) }
        set { dropped = newValue.uint64 }
    }
    var shedField: Int64Convertible {
        get { Int64Convertible(shed) }
        set { shed = newValue.uint64 }
    }
    var coalescedField: Int64Convertible {
        get { Int64Convertible(coalesced) }
        set { coalesced = newValue.uint64 }
    }
    var cancelledField: Int64Convertible {
        get { Int64Convertible(cancelled) }
        set { cancelled = newValue.uint64 }
    }
    var finishedField: Int64Convertible {
        get { Int64Convertible(finished) }
        set { finished = newValue.uint64 }
    }
    var failedField: Int64Convertible {
        get { Int64Convertible(failed) }
        set { failed = newValue.uint64 }
    }
    var timedOutField: Int64Convertible {
        get { Int64Convertible(timedOut) }
        set { timedOut = newValue.uint64 }
    }
    var joinedField: Int64Convertible {
        get { Int64Convertible(joined) }
        set { joined = newValue.uint64 }
    }
    var retriesField: Int64Convertible {
        get { Int64Convertible(retries) }
        set { retries = newValue.uint64 }
    }
    var queuedField: Int64Convertible {
        get { Int64Convertible(queued) }
        set { queued = newValue.uint64 }
    }
    var queueWaitNanosecondsField: Int64Convertible {
        get { Int64Convertible(queueWaitNanoseconds) }
        set { queueWaitNanoseconds = newValue.uint64 }
    }
    var queueLengthField: Int64Convertible {
        get { Int64Convertible(queueLength) }
        set { queueLength = newValue.int }
    }
    var staleCommitsDroppedField: Int64Convertible {
        get { Int64Convertible(staleCommitsDropped) }
        set { staleCommitsDropped = newValue.uint64 }
    }
    var identityEvaluationsField: Int64Convertible {
        get { Int64Convertible(identityEvaluations) }
        set { identityEvaluations = newValue.uint64 }
    }
    var observationCyclesStoppedField: Int64Convertible {
        get { Int64Convertible(observationCyclesStopped) }
        set { observationCyclesStopped = newValue.uint64 }
    }
    var liveSlotsField: Int64Convertible {
        get { Int64Convertible(liveSlots) }
        set { liveSlots = newValue.int }
    }
    var runningActionsField: Int64Convertible {
        get { Int64Convertible(runningActions) }
        set { runningActions = newValue.int }
    }
    var liveGenerationsField: Int64Convertible {
        get { Int64Convertible(liveGenerations) }
        set { liveGenerations = newValue.int }
    }
}

/// A counter's value as one type for every field (`UInt64` counters, `Int` gauges), stored as
/// the bit pattern of an `Int64` so that adding wraps like the counters themselves.
struct Int64Convertible: Sendable {
    let int64: Int64
    init(_ value: UInt64) { int64 = Int64(bitPattern: value) }
    init(_ value: Int) { int64 = Int64(value) }
    init(_ value: Int64) { int64 = value }
    var uint64: UInt64 { UInt64(bitPattern: int64) }
    var int: Int { Int(truncatingIfNeeded: int64) }
}
