import TaskLoopCore

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

/// A `KeyedAction<Key>` with its key type erased, for `RunBody`. The run's record, which knows
/// its key, calls it with the key: the action's own methods then know `Key` from the action
/// itself, where naming `KeyedAction<Key>` from the record's generic code would look its type
/// up at run time on every run (a generic metadata lookup, a quarter of the adapting closure's
/// saving).
@usableFromInline
protocol KeyedTaskAction: AnyObject, Sendable {
    /// The Swift task of a run on the loop (`executor`), calling the action with `key`, its
    /// record's key (of this action's key type: a template for `Key` is declared only on a
    /// `TaskRegistry<Key>`). Loop thread only.
    func makeRunTask<RecordKey>(
        key: RecordKey, context: TaskContext, executor: any TaskExecutor, priority: TaskPriority
    ) -> RunTask

    /// `makeRunTask` for a named run (`RegistryConfiguration.namesRuns`). Loop thread only.
    func makeNamedRunTask<RecordKey>(
        key: RecordKey, context: TaskContext, executor: any TaskExecutor, priority: TaskPriority, name: String
    ) -> RunTask

    /// Calls the action with `key`, as `makeRunTask` does (off the loop, inside the run's task).
    func call<RecordKey>(key: RecordKey, context: TaskContext) async throws
}

/// The action of a `TaskTemplate<Key>`. Immutable; may be used on any thread.
final class KeyedAction<Key: Hashable & Sendable>: KeyedTaskAction {
    let action: nonisolated(nonsending) @Sendable (Key, TaskContext) async throws -> Void

    init(_ action: nonisolated(nonsending) @escaping @Sendable (Key, TaskContext) async throws -> Void) {
        self.action = action
    }

    func makeRunTask<RecordKey>(
        key recordKey: RecordKey, context: TaskContext, executor: any TaskExecutor, priority: TaskPriority
    ) -> RunTask {
        let key = Self.ownKey(recordKey)
        let action = self.action
        // As `RegistryCore.startTask`'s task, with the key passed straight to the action.
        return RunTask(executorPreference: executor, priority: priority) { () async throws -> Void in
            var failure: (any Error)?
            // The action is `nonisolated(nonsending)`: it runs right here, on the loop, with
            // the run's marker bound for it and its child tasks (`shutdown()` reads it).
            do {
                try await CurrentRun.$marker.withValue(CurrentRun(record: context.run, generation: context.generation))
                {
                    try await action(key, context)
                }
            } catch {
                failure = error
            }
            context.run.core.runEnded(context.run, generation: context.generation, failure: failure)
        }
    }

    /// Named runs (opt-in) are made apart from `makeRunTask`: a second `Task.init` there, or a
    /// `name:` argument even when nil, stops the optimizer inlining the unnamed one (about 100
    /// instructions a W1 change).
    func makeNamedRunTask<RecordKey>(
        key recordKey: RecordKey, context: TaskContext, executor: any TaskExecutor, priority: TaskPriority,
        name: String
    ) -> RunTask {
        let key = Self.ownKey(recordKey)
        let action = self.action
        return RunTask(name: name, executorPreference: executor, priority: priority) {
            await RegistryCore.runToEnd(context) { try await action(key, context) }
        }
    }

    func call<RecordKey>(key recordKey: RecordKey, context: TaskContext) async throws {
        try await action(Self.ownKey(recordKey), context)
    }

    /// The record's key as this action's `Key`, checked in every build: a template for `Key` is
    /// declared only on a `TaskRegistry<Key>` (the types say so), and if that ever failed the
    /// program stops here instead of reinterpreting a key of another type. The check compares
    /// two metadata pointers the generic context already holds (no lookup, no dynamic cast:
    /// a dynamic cast of the key would cost one per run).
    @inline(__always)
    private static func ownKey<RecordKey>(_ recordKey: RecordKey) -> Key {
        precondition(RecordKey.self == Key.self, "BUG DETECTED: a template's action called with another key type")
        // unsafeBitCast: to its own type, checked just above.
        return unsafeBitCast(recordKey, to: Key.self)
    }

    /// `keyed` as the action of a template for `Key` (off the hot path: `ObservedTask`). A
    /// checked cast: a template for `Key` is declared only on a `TaskRegistry<Key>`.
    static func of(_ keyed: any KeyedTaskAction) -> KeyedAction<Key> {
        guard let action = keyed as? KeyedAction<Key> else {
            preconditionFailure("BUG DETECTED: a template's action of another key type on a TaskRegistry<\(Key.self)>")
        }
        return action
    }
}
