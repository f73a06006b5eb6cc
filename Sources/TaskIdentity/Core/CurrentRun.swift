/// The run of a registry task that the current Swift task belongs to: bound as a task-local
/// around every run's action, so that its child tasks (`async let`, task groups, and the
/// unstructured tasks it creates) inherit it. `shutdown()` reads it to tell that it is awaited
/// from inside one of its own registry's runs, which it must not wait for.
///
/// Immutable; may be read on any thread (the record is compared and read on the loop thread).
struct CurrentRun: Sendable {
    let record: AnyTaskRecord
    let generation: UInt64

    /// The run whose action, or child task, is executing now; `nil` outside every run (and in
    /// a synchronous action, which runs outside any task).
    @TaskLocal static var marker: CurrentRun?
}
