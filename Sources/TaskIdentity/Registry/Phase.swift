/// Why a run (or a run that was waiting to start) was cancelled.
///
/// A value type; may be used on any thread.
public enum CancellationReason: Hashable, Sendable {
    /// The task was declared with a different id; this run belonged to the old one.
    case identityChanged
    /// The slot was removed (the view disappeared).
    case removed
    /// The restart policy, debounce or throttle replaced this identity with a newer one
    /// before it started; it never ran.
    case supersededByPolicy
    /// The registry shut down.
    case registryShutDown
    /// The action threw `CancellationError` on its own (for example a sleep it awaited was
    /// cancelled by the loop's shutdown).
    case actionCancelled
    /// `TaskRegistry.cancel(_:name:)` cancelled it; the task stays in its slot.
    case cancelledByCaller
    /// `TaskRegistry.dropPending(_:name:)` dropped it before it started.
    case pendingDropped
    /// The run was still running when its time limit (`timeout:`) passed. The task keeps its
    /// identity, as after a failure: declaring the same id again does not run it again.
    case timedOut
    /// A full concurrency limit's queue (`ConcurrencyLimit(maxQueued:shed:)`) shed this
    /// generation before it started; it never ran, and its task forgot the identity.
    case shed
}

/// The phase of a task: of its latest identity's run.
///
/// `waiting` covers a debounce or throttle window and a run waiting for the previous one to
/// end (`awaitPrevious`, `keepRunning`). Cancellation is never a failure: a run that throws
/// `CancellationError`, or throws anything after the registry cancelled it, ends `cancelled`.
///
/// A value type; may be used on any thread.
public enum TaskPhase: Sendable, CustomStringConvertible {
    /// Not declared (or not yet observed).
    case idle
    /// Declared; will start when its debounce, throttle or previous run allows.
    case waiting
    /// The action is running.
    case running
    /// The action returned while it was the current run.
    case finished
    /// The run was cancelled (or never started), for the given reason.
    case cancelled(CancellationReason)
    /// The action threw an error other than cancellation while it was the current run.
    case failed(any Error)

    /// Whether the phase is final for its run: `finished`, `cancelled` or `failed`.
    public var isFinal: Bool {
        switch self {
        case .finished, .cancelled, .failed: return true
        case .idle, .waiting, .running: return false
        }
    }

    var isIdle: Bool {
        if case .idle = self { return true }
        return false
    }

    /// `idle`, `waiting`, `running`, `finished`, `cancelled(reason)` or `failed(error)`.
    public var description: String {
        switch self {
        case .idle: return "idle"
        case .waiting: return "waiting"
        case .running: return "running"
        case .finished: return "finished"
        case .cancelled(let reason): return "cancelled(\(reason))"
        case .failed(let error): return "failed(\(error))"
        }
    }
}

/// One change observed on a task: its generation's new phase, and whether the delayed
/// progress signal is on.
///
/// A value type; may be used on any thread.
public struct TaskPhaseUpdate: Sendable, CustomStringConvertible {
    /// The generation (identity number, counting from 1 per slot lifetime) the phase belongs to.
    public let generation: UInt64
    /// The phase that generation has entered.
    public let phase: TaskPhase
    /// Whether the delayed progress signal is on (see `progressDelay:`).
    public let showsProgress: Bool

    /// `g3 running progress`, for readable test failures.
    public var description: String { "g\(generation) \(phase)\(showsProgress ? " progress" : "")" }
}

/// Restart policy: what a declaration with a new id does to a run still in progress.
///
/// A value type; may be used on any thread.
public enum RestartPolicy: Hashable, Sendable {
    /// SwiftUI's rule: cancel the running action and start the new one at once.
    case cancelPrevious
    /// Cancel the running action, and start the new one only once the cancelled one has
    /// ended, so that their side effects never overlap.
    case awaitPrevious
    /// Let the running action finish; then run the latest id declared meanwhile (identities
    /// declared in between and replaced never run).
    case keepRunning
    /// Keep what the task has: while a run is under way or a generation waits to start, a new
    /// identity is dropped (a run already cancelled, still ending, does not count: the new
    /// identity then runs). The declaration creates no generation and changes nothing (not the
    /// identity, not the options); it is counted in `RegistryCounters.dropped` and traced. Once
    /// the task is idle, a new identity runs as under `cancelPrevious`. WorkManager's `KEEP`,
    /// Hatchet's `CANCEL_NEWEST`.
    case keepRunningDropNew
    /// Run every identity, once each, in the order declared (WorkManager's `APPEND`): the
    /// running action finishes, then the next identity runs, and so on. At most `maxQueued`
    /// identities wait behind the run (1 or more; the first of them is the task's pending
    /// generation, phase `waiting`; the others are declarations not yet made generations, each
    /// made one when the run before it starts). A new identity declared while `maxQueued` wait
    /// is dropped (counted in `RegistryCounters.dropped`, traced): the queue keeps what it has.
    /// An identity equal to the last one declared is `unchanged`. `cancel`, `remove` and
    /// shutdown drop the identities still waiting (counted in `dropped`); `dropPending` ends the
    /// pending one and the next takes its place.
    case appendInOrder(maxQueued: Int)
}
