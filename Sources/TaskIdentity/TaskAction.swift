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
    case synchronous(SynchronousTaskAction)
}
