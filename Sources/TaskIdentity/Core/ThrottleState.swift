import TaskLoopCore

/// Throttle bookkeeping, allocated only for throttled tasks.
final class ThrottleState {
    var lastStart: UInt64 = 0
    var timer: (any LoopTimer)?
}
