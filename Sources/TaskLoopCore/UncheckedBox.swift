/// Carries a loop-thread object (a socket, a sleep request) into a `@Sendable` closure, such as
/// a task-cancellation handler, that only touches it on the loop thread.
///
/// The compiler cannot see that rule: a cancellation handler is `@Sendable` because it may run
/// on any thread, and it is, but it only hops to the loop (`execute`) before using the value,
/// or uses it at once when it already runs there. Every use must keep to that.
package struct UncheckedBox<Value>: @unchecked Sendable {  // unchecked: used on its loop thread only
    package let value: Value
    package init(_ value: Value) { self.value = value }
}
