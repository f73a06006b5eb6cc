import TaskLoopCore

/// The one error type of the registry: a stable `code` to match on, and a `detail` that says
/// what the code alone does not (which option was negative, and its value).
///
/// Match on the code (`catch let error as RegistryError where error.code == .overloaded`) or
/// on the common values (`#expect(throws: RegistryError.shutDown)`). New codes may be added;
/// match with a `default`.
///
/// A value type; may be used on any thread.
public struct RegistryError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a small set of stable codes.
    ///
    /// A value type; may be used on any thread.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case shutDown
            case loopNotStarted
            case overloaded
            case invalidDuration
            case calledOffLoopThread
            case invalidObservationDepth
            case loopFailed
            case invalidTraceCapacity
            case invalidPostedCallLimit
            case invalidConcurrencyLimit
            case invalidRetryPolicy
            case invalidAppendQueue
        }
        private let base: Base

        /// The registry has shut down (or is shutting down), or its loop has, and it takes no
        /// more calls.
        public static let shutDown = Code(base: .shutDown)
        /// The registry's loop has not been started yet: start it (`UVLoop.start()`), then
        /// declare. The registry stays usable; nothing was queued.
        public static let loopNotStarted = Code(base: .loopNotStarted)
        /// A call from another thread found `RegistryConfiguration.postedCallLimit` calls already
        /// queued for the loop. It was not queued; `await flush()` and call again.
        public static let overloaded = Code(base: .overloaded)
        /// A debounce, throttle, progress delay or synchronous delay was negative, or a time limit
        /// (`timeout:`) was shorter than a nanosecond.
        public static let invalidDuration = Code(base: .invalidDuration)
        /// A call that must be made on the registry's loop thread was made elsewhere: a
        /// synchronous query (use its async form), or an observed task's declaration.
        public static let calledOffLoopThread = Code(base: .calledOffLoopThread)
        /// `maxObservationDepth` was below 1.
        public static let invalidObservationDepth = Code(base: .invalidObservationDepth)
        /// The loop could not take the call for a reason other than its shutdown (a libuv
        /// failure): `loopError` says which.
        public static let loopFailed = Code(base: .loopFailed)
        /// `startTrace` was given a capacity below 1.
        public static let invalidTraceCapacity = Code(base: .invalidTraceCapacity)
        /// `RegistryConfiguration.postedCallLimit` was below 1.
        public static let invalidPostedCallLimit = Code(base: .invalidPostedCallLimit)
        /// A `ConcurrencyLimit` was made with a maximum below 1 or above
        /// `ConcurrencyLimit.maxRunningLimit`, or a negative `maxQueued`.
        public static let invalidConcurrencyLimit = Code(base: .invalidConcurrencyLimit)
        /// A `RetryPolicy` was made with a setting out of its range (`detail` says which).
        public static let invalidRetryPolicy = Code(base: .invalidRetryPolicy)
        /// `RestartPolicy.appendInOrder(maxQueued:)` was given a bound below 1.
        public static let invalidAppendQueue = Code(base: .invalidAppendQueue)

        /// The code's name, such as `shutDown`.
        public var description: String {
            switch base {
            case .shutDown: return "shutDown"
            case .loopNotStarted: return "loopNotStarted"
            case .overloaded: return "overloaded"
            case .invalidDuration: return "invalidDuration"
            case .calledOffLoopThread: return "calledOffLoopThread"
            case .invalidObservationDepth: return "invalidObservationDepth"
            case .loopFailed: return "loopFailed"
            case .invalidTraceCapacity: return "invalidTraceCapacity"
            case .invalidPostedCallLimit: return "invalidPostedCallLimit"
            case .invalidConcurrencyLimit: return "invalidConcurrencyLimit"
            case .invalidRetryPolicy: return "invalidRetryPolicy"
            case .invalidAppendQueue: return "invalidAppendQueue"
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// What the code alone does not say (empty when nothing): for `invalidDuration`, the
    /// option and its value.
    public let detail: String
    /// The loop's error behind this one, when the loop refused or failed the call (a
    /// `shutDown` from a loop that has shut down, every `loopFailed`). Not compared: two
    /// errors are equal when their codes and details are, so `#expect(throws:
    /// RegistryError.shutDown)` matches whatever the cause.
    public let loopError: LoopError?

    /// Creates an error; the library creates these, users normally only match on them.
    ///
    /// May be called from any thread.
    public init(_ code: Code, detail: String = "", loopError: LoopError? = nil) {
        self.code = code
        self.detail = detail
        self.loopError = loopError
    }

    /// The registry's error for a call its loop refused or failed, keeping the loop's error.
    ///
    /// May be called from any thread.
    init(loopRefused error: LoopError) {
        switch error.code {
        case .shutDown, .handleClosed: self.init(.shutDown, loopError: error)
        case .notStarted: self.init(.loopNotStarted, loopError: error)
        case .calledOffLoopThread: self.init(.calledOffLoopThread, loopError: error)
        default: self.init(.loopFailed, loopError: error)
        }
    }

    /// Equal when the codes and details are (`loopError` is not compared).
    ///
    /// May be called from any thread.
    public static func == (lhs: RegistryError, rhs: RegistryError) -> Bool {
        lhs.code == rhs.code && lhs.detail == rhs.detail
    }

    /// Hashes the code and the detail, as `==` compares them.
    ///
    /// May be called from any thread.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(detail)
    }

    /// `RegistryError(.shutDown)`.
    public static let shutDown = RegistryError(.shutDown)
    /// `RegistryError(.loopNotStarted)`.
    public static let loopNotStarted = RegistryError(.loopNotStarted)
    /// `RegistryError(.overloaded)`.
    public static let overloaded = RegistryError(.overloaded)
    /// `RegistryError(.calledOffLoopThread)`.
    public static let calledOffLoopThread = RegistryError(.calledOffLoopThread)

    /// The option `name` was given the duration `value`: negative, or for `timeout`, shorter
    /// than a nanosecond.
    ///
    /// May be called from any thread.
    public static func invalidDuration(name: String, _ value: Duration) -> RegistryError {
        let rule =
            ["timeout", "refreshEvery", "maxWait"].contains(name)
            ? "must be at least 1 nanosecond" : "must not be negative"
        return RegistryError(.invalidDuration, detail: "\(name) \(rule) (got \(value))")
    }

    /// `maxObservationDepth` was given `value`, below 1.
    ///
    /// May be called from any thread.
    public static func invalidObservationDepth(_ value: Int) -> RegistryError {
        RegistryError(.invalidObservationDepth, detail: "maxObservationDepth must be at least 1 (got \(value))")
    }

    /// `startTrace` or `RegistryConfiguration.traceCapacity` was given the capacity `value`,
    /// below 1.
    ///
    /// May be called from any thread.
    public static func invalidTraceCapacity(_ value: Int) -> RegistryError {
        RegistryError(.invalidTraceCapacity, detail: "a trace's capacity must be at least 1 (got \(value))")
    }

    /// `RegistryConfiguration.postedCallLimit` was given `value`, below 1.
    ///
    /// May be called from any thread.
    public static func invalidPostedCallLimit(_ value: Int) -> RegistryError {
        RegistryError(.invalidPostedCallLimit, detail: "postedCallLimit must be at least 1 (got \(value))")
    }

    /// `ConcurrencyLimit(maxRunning:)` was given `value`, below 1 or above
    /// `ConcurrencyLimit.maxRunningLimit`.
    ///
    /// May be called from any thread.
    public static func invalidConcurrencyLimit(_ value: Int) -> RegistryError {
        RegistryError(
            .invalidConcurrencyLimit,
            detail:
                "a concurrency limit's maxRunning must be 1 through \(ConcurrencyLimit.maxRunningLimit) (got \(value))")
    }

    /// `RestartPolicy.appendInOrder(maxQueued:)` was given a bound below 1. May be called from
    /// any thread.
    public static func invalidAppendQueue(_ value: Int) -> RegistryError {
        RegistryError(.invalidAppendQueue, detail: "appendInOrder's maxQueued must be 1 or more (got \(value))")
    }

    /// A `ConcurrencyLimit` was made with a negative `maxQueued`. May be called from any thread.
    public static func invalidConcurrencyLimit(maxQueued value: Int) -> RegistryError {
        RegistryError(
            .invalidConcurrencyLimit, detail: "a concurrency limit's maxQueued must be 0 or more (got \(value))")
    }

    /// A `RetryPolicy` setting was out of its range: `rule` says which and what it takes.
    ///
    /// May be called from any thread.
    public static func invalidRetryPolicy(_ rule: String) -> RegistryError {
        RegistryError(.invalidRetryPolicy, detail: "retry policy: \(rule)")
    }

    /// A one-line explanation (with the loop's error, when there is one).
    public var description: String {
        guard let loopError, detail.isEmpty else { return plainDescription }
        return "\(plainDescription) (\(loopError))"
    }

    private var plainDescription: String {
        if !detail.isEmpty { return detail }
        switch code {
        case .shutDown: return "the task registry has shut down"
        case .loopNotStarted: return "the task registry's loop has not been started"
        case .overloaded:
            return "too many calls are queued for the registry's loop; await flush() and call again"
        case .calledOffLoopThread:
            return "this call must be made on the registry's loop thread (use its async form elsewhere)"
        case .loopFailed: return "the registry's loop failed the call"
        default: return "task registry error: \(code)"
        }
    }
}
