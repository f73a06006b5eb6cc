/// Errors of the registry.
///
/// A value type; may be used on any thread.
public enum RegistryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The registry has shut down (or is shutting down) and takes no declarations.
    case shutDown
    /// A debounce, throttle or progress delay was negative.
    case invalidDuration(name: String, Duration)
    /// A call that must be made on the registry's loop thread was made elsewhere (an observed
    /// task's identity closure captures loop-confined state).
    case calledOffLoopThread
    /// `maxObservationDepth` was below 1.
    case invalidObservationDepth(Int)

    /// A one-line explanation.
    public var description: String {
        switch self {
        case .shutDown: return "the task registry has shut down"
        case .invalidDuration(let name, let value): return "\(name) must not be negative (got \(value))"
        case .calledOffLoopThread: return "this call must be made on the registry's loop thread"
        case .invalidObservationDepth(let value): return "maxObservationDepth must be at least 1 (got \(value))"
        }
    }
}
