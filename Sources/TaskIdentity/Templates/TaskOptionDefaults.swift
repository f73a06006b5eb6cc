/// The default of every declaration option: the one place that defines them. Every declaring
/// signature (`TaskRegistry.task`, observed tasks, `ShardedTaskRegistry`, `TaskTemplate`,
/// `TypedTaskTemplate` and their synchronous forms) takes its defaults from here, so changing a
/// default is one edit.
///
/// Constants; may be read from any thread. (Computed and inlinable, so that a default argument
/// costs a constant at the call site, not a global's lazy initialization check.)
public enum TaskOptionDefaults {
    /// The Swift task priority of an action: `.userInitiated`.
    @inlinable public static var priority: TaskPriority { .userInitiated }
    /// No debounce: a declaration starts at once (in the loop turn's start pass).
    @inlinable public static var debounce: Duration { .zero }
    /// No bound on a debounce window that keeps re-opening.
    @inlinable public static var maxWait: Duration? { nil }
    /// No throttle.
    @inlinable public static var throttle: Duration { .zero }
    /// A new identity cancels the run in progress, as SwiftUI's `.task(id:)` does.
    @inlinable public static var policy: RestartPolicy { .cancelPrevious }
    /// No progress delay: the progress signal stays off.
    @inlinable public static var progressDelay: Duration? { nil }
    /// No time limit: a run runs until it ends or is cancelled.
    @inlinable public static var timeout: Duration? { nil }
    /// No concurrency limit of the task's own: the registry's
    /// (`RegistryConfiguration.concurrencyLimit`) if it has one, or none.
    @inlinable public static var limit: ConcurrencyLimit? { nil }
    /// No retry: a run that fails ends `failed`.
    @inlinable public static var retry: RetryPolicy? { nil }
    /// Results never go stale: declaring the same identity again after its run ended does
    /// nothing.
    @inlinable public static var staleAfter: Duration? { nil }
    /// No refresh: a run that ended is not run again on a timer.
    @inlinable public static var refreshEvery: Duration? { nil }
    /// Actions run on the registry's loop.
    @inlinable public static var executor: ActionExecutor { .loop }
    /// A synchronous action is called when its run starts, with no delay.
    @inlinable public static var synchronousDelay: Duration { .zero }
}
