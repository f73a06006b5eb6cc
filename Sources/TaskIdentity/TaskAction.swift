import UVLoop

/// The action of a task: one Swift task per run, on the registry's loop or on the executor
/// chosen for the task (`ActionExecutor`).
///
/// `nonisolated(nonsending)`: the action runs on the executor its run's task is on, so calling
/// it is a plain call, with no executor check and switch on entry. A closure isolated to an
/// actor (`{ @MainActor context in … }`) still runs on that actor, whatever `executor:` says;
/// it lands its results with `TaskContext.commitOnLoop`, since `commit` is loop-thread only.
public typealias TaskAction = nonisolated(nonsending) @Sendable (TaskContext) async throws -> Void

/// The action of a synchronous task (`TaskTemplate.synchronous`): called on the registry's loop
/// thread, inline, with no Swift task.
public typealias SynchronousTaskAction = @Sendable (TaskContext) throws -> Void

/// What a run executes: a Swift task, or a synchronous call on the loop thread.
@usableFromInline
enum RunBody: Sendable {
    case task(TaskAction)
    /// A template's action, which takes the slot's key: the run's task calls it directly with
    /// its record's key (`TaskRecord.makeKeyedRunTask`), so that no closure adapts it (an
    /// adapting closure costs two task-allocator frames and an executor switch per run).
    case keyedTask(any KeyedTaskAction)
    case synchronous(SynchronousTaskAction)
}

/// A `KeyedAction<Key>` with its key type erased, for `RunBody`.
@usableFromInline
protocol KeyedTaskAction: AnyObject, Sendable {}

/// The action of a `TaskTemplate<Key>`. Immutable; may be used on any thread.
final class KeyedAction<Key>: KeyedTaskAction {
    let action: nonisolated(nonsending) @Sendable (Key, TaskContext) async throws -> Void

    init(_ action: nonisolated(nonsending) @escaping @Sendable (Key, TaskContext) async throws -> Void) {
        self.action = action
    }

    /// `keyed` as the action of a template for `Key`.
    static func of(_ keyed: any KeyedTaskAction) -> KeyedAction<Key> {
        // unsafeDowncast: a template for `Key` is declared only on a `TaskRegistry<Key>` (the
        // types say so), so the keyed actions of its records are `KeyedAction<Key>`s.
        unsafeDowncast(keyed, to: KeyedAction<Key>.self)
    }
}
