import TaskLoopCore

/// The life of one task of one slot, as a pure state machine: one `mutating func` per event,
/// each returning what the registry's core must do. The core owns the side effects (Swift
/// tasks, deadline queues, throttle timers, phase streams); this type owns the rules, the
/// phase, and every counter move, so that the counter invariant holds by construction.
///
/// Where the task stands is one enum, `Stage` (see docs/state-machine.md for the diagram),
/// whose cases hold what exists in them: the current run (its kind and progress signal), the
/// generation waiting to start (a debounce window's deadline), both at once only where the
/// rules allow it (a `keepRunning` run beside a held generation), and nothing once removed. A
/// removed task with a current run, a generation queued to start beside a run, or a deadline
/// without a debounce window cannot be built. Beside the stage are the task's history
/// (`generation`, `runGeneration`, `hasStarted`), its phase, the cancelled runs still ending
/// (`endingRuns`, which a removed task keeps), and whether the record sits in the core's start
/// queue (which it leaves only at the pass, whatever the stage meanwhile). An event that
/// cannot happen in the current stage is a bug in the registry: it traps and prints the state.
///
/// The stage holds plain values only: the run's Swift task and the pending action stay in the
/// record, so that moving the machine from stage to stage never retains, releases or copies
/// out of line (a stage holding them cost W1 about 900 instructions per change; the
/// internal-checks build checks that the record's pending action exists exactly while a
/// generation is pending).
///
/// Loop thread only (a value inside a loop-confined record).
@usableFromInline
struct TaskStateMachine: Sendable, CustomStringConvertible {
    /// Where the task stands.
    @usableFromInline
    enum Stage: Equatable, Sendable {
        /// No current run and nothing pending: never declared, or its latest generation ended.
        case quiet
        /// The latest generation waits to start, with no current run.
        case waiting(Waiting)
        /// A current run, and nothing pending.
        case running(ActiveRun)
        /// The latest generation, held, beside a current run that `keepRunning` keeps (it can
        /// be queued to start only once the run has ended). The held generation comes first:
        /// its deadline then leads the payload, and the machine packs into 34 bytes, where the
        /// other order takes 42 and moves the record to a larger malloc size class (about a
        /// hundred instructions per change in malloc, on W1).
        case heldBesideRun(Held, ActiveRun)
        /// Out of its slot: only runs already cancelled are left to end (`endingRuns`).
        case removed
    }

    /// Why a generation that has not started waits, where it may wait beside a current run.
    @usableFromInline
    enum Held: Equatable, Sendable {
        /// Waiting out its debounce window, which closes at `deadline` (loop nanoseconds).
        case debouncing(deadline: UInt64)
        /// Held until the throttle window since the last start closes.
        case throttled
        /// Waiting for a previous run to end (`awaitPrevious`, `keepRunning`).
        case awaitingPrevious

        /// A pattern, not `==`: the synthesized `==` of an enum with payloads is a call.
        var isThrottled: Bool {
            if case .throttled = self { return true }
            return false
        }
    }

    /// Why a generation that has not started waits, with no current run.
    @usableFromInline
    enum Waiting: Equatable, Sendable {
        case held(Held)
        /// Starts in this turn's start pass.
        case startQueued
        /// Waits in its concurrency limit's queue (`ConcurrencyLimit`) for a run to end.
        case startLimited
        /// Its run failed, and it waits for its task's retry timer to be tried again
        /// (`RetryPolicy`). Never beside a run: only the latest generation's run is retried.
        case retrying

        /// A pattern, not `==`: the synthesized `==` of an enum with payloads is a call.
        var isThrottled: Bool {
            if case .held(.throttled) = self { return true }
            return false
        }

        var isStartLimited: Bool {
            if case .startLimited = self { return true }
            return false
        }
    }

    /// The current run: the one whose results may still land.
    @usableFromInline
    struct ActiveRun: Equatable, Sendable {
        @usableFromInline var kind: ActiveKind
        /// Its delayed progress signal is on.
        @usableFromInline var showsProgress = false
    }

    /// What the current run is, and what the start pass starts (a synchronous run with no delay
    /// starts executing).
    @usableFromInline
    enum ActiveKind: UInt8, Sendable {
        /// A Swift task.
        case task
        /// A run of a template that shares runs (`sharesRuns: true`): a Swift task that serves
        /// every slot in it, this one's own or one it joined. Cancelled, the slot leaves it, and
        /// only the last slot to leave cancels the task.
        case sharedTask
        /// A synchronous run waiting out its delay; its action has not been called.
        case synchronousDelayed
        /// A synchronous run whose action is executing now, on the loop thread.
        case synchronousExecuting
    }

    /// The pending part of the stage without its payload (a debounce window's deadline): a
    /// view of `Stage`, never stored, that the core's guards compare as one byte (comparing
    /// `Waiting`, which holds the deadline, is a call) and the table test prints.
    @usableFromInline
    enum Pending: UInt8, Sendable {
        /// No generation waits: the latest one is running, has ended, or none was declared.
        case none
        case debouncing
        case throttled
        case awaitingPrevious
        case startQueued
        case startLimited
        case retrying
    }

    /// How a run's action ended (a failure's error stays with the core).
    enum Outcome {
        case finished
        case cancelled
        case failed
    }

    /// `TaskPhase` without the error of `failed`, so that the machine and its effects stay
    /// plain values: copying them never retains, and never calls out of line.
    @usableFromInline
    enum Phase: Equatable, Sendable, CustomStringConvertible {
        case idle, waiting, running, finished, failed
        case cancelled(CancellationReason)
        /// `waiting`, not published to observers: queued to start in this turn's pass, which it
        /// leaves within the turn unless it then waits in a concurrency limit's queue (and is
        /// published there). Reads and prints as `waiting`.
        case waitingUnpublished

        /// The public phase; `failure` is the error of a `failed` one.
        func taskPhase(failure: (any Error)?) -> TaskPhase {
            switch self {
            case .idle: return .idle
            case .waiting, .waitingUnpublished: return .waiting
            case .running: return .running
            case .finished: return .finished
            // The error is stored with the phase while the task is in its slot.
            case .failed: return .failed(failure ?? UnrecordedFailure())
            case .cancelled(let reason): return .cancelled(reason)
            }
        }

        @usableFromInline var description: String {
            switch self {
            case .idle: return "idle"
            case .waiting, .waitingUnpublished: return "waiting"
            case .running: return "running"
            case .finished: return "finished"
            case .failed: return "failed"
            case .cancelled(let reason): return "cancelled(\(reason))"
            }
        }
    }

    // Field order is cache order: `isCurrentRun` (every commit) reads `runGeneration` and
    // `stage`, which then share the record's first cache line with its header.
    /// The generation of the current run (or the last one started).
    var runGeneration: UInt64 = 0
    /// How many identities the task has had in its slot's lifetime.
    var generation: UInt64 = 0
    /// Where the task stands.
    var stage = Stage.quiet
    /// The phase of the latest generation.
    var phase: Phase = .idle
    /// Cancelled runs (Swift tasks, or a synchronous action cancelled from inside) that have
    /// not ended yet.
    var endingRuns: Int32 = 0
    /// A run has started in this slot's lifetime (throttle and `restarted` count from it).
    var hasStarted = false
    /// The record is in the core's start queue (possibly no longer `startQueued`).
    var inStartQueue = false

    init() {}

    /// Whether `generation` is the current run's.
    @inline(__always)
    func isCurrentRun(_ generation: UInt64) -> Bool {
        switch stage {
        case .running, .heldBesideRun: return runGeneration == generation
        case .quiet, .waiting, .removed: return false
        }
    }

    /// The pending part of the stage.
    var pending: Pending {
        switch stage {
        case .quiet, .running, .removed: return .none
        case .waiting(.startQueued): return .startQueued
        case .waiting(.startLimited): return .startLimited
        case .waiting(.retrying): return .retrying
        case .waiting(.held(let held)), .heldBesideRun(let held, _):
            switch held {
            case .debouncing: return .debouncing
            case .throttled: return .throttled
            case .awaitingPrevious: return .awaitingPrevious
            }
        }
    }

    /// The current-run part of the stage: the kind of the current run, if there is one.
    var run: ActiveKind? {
        switch stage {
        case .quiet, .waiting, .removed: return nil
        case .running(let run), .heldBesideRun(_, let run): return run.kind
        }
    }

    /// The task has left its slot.
    var isRemoved: Bool {
        if case .removed = stage { return true }
        return false
    }

    /// The delayed progress signal of the current run is on.
    var showsProgress: Bool {
        switch stage {
        case .running(let run), .heldBesideRun(_, let run): return run.showsProgress
        case .quiet, .waiting, .removed: return false
        }
    }

    /// The deadline of the debounce window being waited out; 0 when none is.
    var debounceDeadline: UInt64 {
        switch stage {
        case .waiting(.held(.debouncing(let deadline))), .heldBesideRun(.debouncing(let deadline), _):
            return deadline
        default: return 0
        }
    }

    @usableFromInline var description: String {
        "TaskStateMachine(generation: \(generation), runGeneration: \(runGeneration), stage: \(stage), "
            + "endingRuns: \(endingRuns), hasStarted: \(hasStarted), inStartQueue: \(inStartQueue), "
            + "phase: \(phase))"
    }
}

/// The error of a `failed` phase read after its task left its slot, when the registry no
/// longer keeps the error (the registry's own lookups never do this).
struct UnrecordedFailure: Error {}
