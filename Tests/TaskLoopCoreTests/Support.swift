/// Mutable state that a test touches only from the test loop's steps, so it needs no lock.
final class LoopConfined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
