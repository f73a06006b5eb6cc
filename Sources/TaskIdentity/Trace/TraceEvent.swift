/// One thing that happened to one task, as a registry's trace records it: when (loop time),
/// to which task (slot key and task name), for which generation, and what.
///
/// A value; made and read on the loop thread (a `RegistryTrace` hands copies anywhere).
struct TraceEvent: Sendable {
    /// A window a generation waits out before it may start.
    enum Window: String, Sendable {
        case debounce, throttle
        /// The wait before a failed run is tried again (`RetryPolicy`).
        case retry
    }

    /// What happened.
    enum Kind: Sendable {
        /// A declaration with a new identity began generation `generation`. Kept as the value,
        /// described only when the trace is read: recording stays a copy, not a formatting.
        case declared(identity: any Hashable & Sendable)
        /// A declaration of a new identity was dropped by its policy (`keepRunningDropNew`): no
        /// generation began (`generation` is the task's current one, which it kept).
        case declarationDropped
        /// The generation started waiting out a window, until the loop time `until`.
        case windowOpened(Window, until: UInt64)
        /// The window closed: the generation went on to the start gate.
        case windowClosed(Window)
        /// The generation waits in its concurrency limit's queue (closed by its start, or by
        /// its end without one).
        case queued
        /// The run joined another slot's run of an equal identity (a template that shares runs)
        /// instead of starting an action of its own.
        case joinedRun
        /// The run started: on the registry's loop (`executor` nil), or on its task's executor
        /// (`ActionExecutor`'s description: `global`, `executor(…)`).
        case runStarted(executor: String?)
        /// The generation was cancelled: its current run (`ofRun`), or a pending generation
        /// that never ran.
        case cancelled(CancellationReason, ofRun: Bool)
        /// A `commit` of the run landed.
        case commitLanded
        /// A `commit` of a run no longer current was dropped.
        case commitDropped
        /// The run stored a result.
        case resultStored
        /// The run's action returned, with the phase the run ended in (`ended`), or after the
        /// run had been cancelled (`ended` nil).
        case runEnded(phase: TaskStateMachine.Phase?)
        /// The run's delayed progress signal turned on.
        case progressShown
        /// The task left its slot.
        case removed
        /// The registry shut down (recorded once, with no task).
        case shutDown
        /// A write to a property an observed identity reads caused this generation; `writer`
        /// is the run that wrote, if the write came from one.
        case observedChange(writer: Writer?)
        /// The observed chain that caused this generation was stopped as a cycle.
        case cycleStopped
    }

    /// The run whose write caused a re-evaluation.
    struct Writer: Sendable {
        let key: any Hashable & Sendable
        let name: TaskName
        let generation: UInt64

        init(_ run: ObservedRun) {
            key = run.key
            name = run.name
            generation = run.generation
        }

        /// Its task's label, as `TraceEvent.task`.
        var task: String { name == .main ? String(describing: key) : "\(key)/\(name)" }
    }

    /// The loop time, in nanoseconds.
    let time: UInt64
    /// The slot's key, as declared (described when the trace is read); `""` for `shutDown`.
    let key: any Hashable & Sendable
    let name: TaskName
    let generation: UInt64
    let kind: Kind
}

extension TraceEvent: CustomStringConvertible {
    /// The task's label: its key, and its name when not `main`.
    var task: String {
        name == .main ? String(describing: key) : "\(key)/\(name)"
    }

    /// One line, for tests and logs: `time key/name gN kind`.
    var description: String {
        "\(time / 1_000_000)ms \(task) g\(generation) \(kind)"
    }

    /// An identity as the trace shows it: `no id` for a declaration without one.
    static func describe(identity: any Hashable & Sendable) -> String {
        identity is NoIdentity ? "no id" : String(describing: identity)
    }
}

extension TraceEvent.Kind: CustomStringConvertible {
    var description: String {
        switch self {
        case .declared(let identity): return "declared \(TraceEvent.describe(identity: identity))"
        case .declarationDropped: return "new identity dropped"
        case .windowOpened(let window, let until): return "\(window) until \(until / 1_000_000)ms"
        case .windowClosed(let window): return "\(window) closed"
        case .queued: return "queued"
        case .joinedRun: return "joined a shared run"
        case .runStarted(let executor): return executor.map { "started on \($0)" } ?? "started"
        case .cancelled(let reason, let ofRun): return ofRun ? "cancelled(\(reason))" : "dropped(\(reason))"
        case .commitLanded: return "commit"
        case .commitDropped: return "stale commit dropped"
        case .resultStored: return "result"
        case .runEnded(let phase): return "ended " + (phase.map { "\($0)" } ?? "after cancel")
        case .progressShown: return "progress"
        case .removed: return "removed"
        case .shutDown: return "shutdown"
        case .observedChange(let writer):
            guard let writer else { return "observed change" }
            return "observed change by \(writer.task) g\(writer.generation)"
        case .cycleStopped: return "cycle stopped"
        }
    }
}
