/// Which registry's run the current Swift task is executing, so that `shutdown()` awaited
/// from inside one of the registry's own actions knows not to wait for that action.
enum RunScope {
    /// The core of the registry whose action this task runs; nil outside actions.
    @TaskLocal static var core: ObjectIdentifier?
}
