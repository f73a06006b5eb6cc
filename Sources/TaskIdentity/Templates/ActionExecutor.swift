import TaskLoopCore

/// Where a task's action runs. The registry's bookkeeping (identities, generations, phases,
/// counters, timers) always stays on the registry's loop; only the action's own code moves.
///
/// - `.loop` (the default): the action runs on the registry's loop thread. No thread hop, and
///   loop-bound I/O (TCP, the loop's clock) resumes where it started. Right for actions that
///   mostly wait.
/// - `.global`: the action runs on Swift's global concurrent executor, on every core. Right
///   for actions that compute: they no longer hold up the loop, and several run at once.
/// - `.executor(someTaskExecutor)`: the action runs on that `TaskExecutor` (another loop of a
///   `UVLoopGroup`, a SwiftNIO event loop's task executor, a pool of your own).
///
/// An action off the loop starts one hop after its run starts, and its end hops back to the
/// loop, where the run's phase is settled. Cancellation reaches it as always
/// (`Task.isCancelled`, `CancellationError` from cancellable waits). `TaskContext.commit` and
/// `isCurrent` read loop state and are loop-thread only: off the loop use their async forms,
/// `commitOnLoop(_:)`, `commitOnLoop(result:)` and `isCurrentOnLoop()`, which hop to the loop,
/// decide there, and stay stale-proof.
///
/// `.executor(registry.loop)` is `.loop`. A registry keeps each distinct executor it was given
/// (with the options it came with) until it shuts down, so make executors once, not per
/// declaration. An executor that never runs a job it was given leaves that run running, and
/// the registry's `shutdown()` waits for it.
///
/// A value type; may be made and used on any thread.
public struct ActionExecutor: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline
    enum Kind: UInt8, Hashable, Sendable {
        case loop, global, custom
    }

    @usableFromInline let kind: Kind
    /// The executor for `.global` and `.executor(_:)`; nil for `.loop`.
    @usableFromInline let taskExecutor: (any TaskExecutor)?

    private init(kind: Kind, taskExecutor: (any TaskExecutor)?) {
        self.kind = kind
        self.taskExecutor = taskExecutor
    }

    /// The registry's loop thread (the default).
    public static let loop = ActionExecutor(kind: .loop, taskExecutor: nil)

    /// Swift's global concurrent executor (`globalConcurrentExecutor`): every core.
    public static var global: ActionExecutor { ActionExecutor(kind: .global, taskExecutor: globalConcurrentExecutor) }

    /// Any task executor. Two values are equal when they name the same executor object.
    public static func executor(_ executor: any TaskExecutor) -> ActionExecutor {
        ActionExecutor(kind: .custom, taskExecutor: executor)
    }

    /// Equal when of the same kind and, for `.executor(_:)`, the same executor object.
    public static func == (lhs: ActionExecutor, rhs: ActionExecutor) -> Bool {
        lhs.kind == rhs.kind && lhs.executorIdentity == rhs.executorIdentity
    }

    /// Hashes the kind and the executor object's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(executorIdentity)
    }

    private var executorIdentity: ObjectIdentifier? { taskExecutor.map { ObjectIdentifier($0) } }

    /// `loop`, `global` or `executor(…)`.
    public var description: String {
        switch kind {
        case .loop: return "loop"
        case .global: return "global"
        case .custom: return "executor(\(taskExecutor.map { String(describing: type(of: $0)) } ?? "?"))"
        }
    }
}
