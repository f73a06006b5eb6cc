/// One task as it was when read on its loop thread: what `TaskRegistry.snapshot(of:name:)`
/// returns to any thread, in one hop to the loop.
///
/// A value type; may be used on any thread.
public struct TaskSnapshot: Sendable, CustomStringConvertible {
    /// The phase of the task's latest generation.
    public let phase: TaskPhase
    /// How many identities the task has had in its slot's lifetime.
    public let generation: UInt64
    /// Whether the delayed progress signal of the current run is on.
    public let showsProgress: Bool
    /// The latest result a run stored (`TaskContext.commit(result:)`), or `nil`.
    public let result: (any Sendable)?
    /// What the latest generation waits for before it can start, while it has not started;
    /// `nil` once it has (and for a task never declared).
    public let waitReason: WaitReason?
    /// The attempt of the latest generation under way or waiting to be tried again (1 for the
    /// first; more only under a `RetryPolicy`).
    public let attempt: Int

    /// What a generation that has not started waits for.
    ///
    /// A value type; may be used on any thread.
    public enum WaitReason: Hashable, Sendable, CustomStringConvertible {
        /// Its debounce window, which each new identity re-opens.
        case debounce
        /// The throttle window since the task's last start.
        case throttle
        /// A previous run to end (`awaitPrevious`, `keepRunning`).
        case previousRun
        /// Its concurrency limit's queue: every place of the limit is taken, or others were
        /// queued first (see `ConcurrencyLimit`).
        case concurrencyLimit
        /// The wait before its failed run is tried again (see `RetryPolicy`).
        case retry
        /// Nothing: it starts at the end of this loop turn (the start pass).
        case startPass

        /// The case's name.
        public var description: String {
            switch self {
            case .debounce: return "debounce"
            case .throttle: return "throttle"
            case .previousRun: return "previousRun"
            case .concurrencyLimit: return "concurrencyLimit"
            case .retry: return "retry"
            case .startPass: return "startPass"
            }
        }
    }

    /// Reads `record`. Loop thread only.
    init(record: AnyTaskRecord) {
        phase = record.phase
        generation = record.generation
        showsProgress = record.showsProgress
        result = record.extras?.result
        attempt = record.core.attempt(of: record, generation: record.state.generation)
        switch record.state.pending {
        case .none: waitReason = nil
        case .debouncing: waitReason = .debounce
        case .throttled: waitReason = .throttle
        case .awaitingPrevious: waitReason = .previousRun
        case .startLimited: waitReason = .concurrencyLimit
        case .retrying: waitReason = .retry
        case .startQueued: waitReason = .startPass
        }
    }

    /// The latest stored result as `type`, or `nil` if none was stored or it is of another
    /// type. May be called from any thread.
    public func result<Value>(as type: Value.Type) -> Value? { result as? Value }

    /// `generation N: phase`, with `(progress)` while the progress signal is on.
    public var description: String {
        "generation \(generation): \(phase)" + (showsProgress ? " (progress)" : "")
    }
}
