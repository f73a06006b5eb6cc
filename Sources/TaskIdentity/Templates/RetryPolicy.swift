/// How a run that fails is tried again: up to `maxAttempts` attempts in all, the first waiting
/// `initialDelay` after the failure, each later one `multiplier` times longer, never longer than
/// `maxDelay`, each shortened by up to `jitter` of itself at random (so that many keys that
/// failed together do not retry together).
///
/// Only a failure is retried: an action that throws anything but `CancellationError` while its
/// run is current. A cancelled run, a run that timed out (`timeout:`) and a run whose task has a
/// newer identity are never retried. The wait between attempts is a loop timer, not a sleeping
/// task: the task is `waiting` (`TaskSnapshot.waitReason` `.retry`), and a new identity, a
/// `remove`, `cancel` or `dropPending` ends the wait (the next identity starts again from its
/// first attempt). Each attempt is a run of the same generation: `TaskContext.attempt` says
/// which, and the task's phase is `running` during each and `failed` only after the last.
///
/// ```swift
/// let fetch = try TaskTemplate<Key>(retry: RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(200))) { key, context in
///     let value = try await backend.fetch(key)      // thrown errors are retried, twice
///     context.commit(result: value)
/// }
/// ```
///
/// A value type; may be made and used on any thread.
public struct RetryPolicy: Hashable, Sendable, CustomStringConvertible {
    /// Attempts in all, the first included; at least 1 (1: no retry).
    public let maxAttempts: Int
    /// The wait before the second attempt.
    public let initialDelay: Duration
    /// How much longer each wait is than the one before; at least 1.
    public let multiplier: Double
    /// The longest wait.
    public let maxDelay: Duration
    /// The share of each wait taken off at random, 0 (none) through 1 (any wait from zero to
    /// the full delay).
    public let jitter: Double

    /// A retry policy.
    ///
    /// - Parameters:
    ///   - maxAttempts: attempts in all, the first included (default 3); 1 through 1,000,000.
    ///   - initialDelay: the wait before the second attempt (default 100 ms); not negative.
    ///   - multiplier: each wait over the one before (default 2); 1 through 1,000, finite.
    ///   - maxDelay: the longest wait (default 10 s); at least `initialDelay`.
    ///   - jitter: the share of each wait taken off at random (default 0.2); 0 through 1.
    /// - Throws: `RegistryError.invalidRetryPolicy`, naming the setting out of range.
    /// - Note: May be called from any thread.
    public init(
        maxAttempts: Int = 3, initialDelay: Duration = .milliseconds(100), multiplier: Double = 2,
        maxDelay: Duration = .seconds(10), jitter: Double = 0.2
    ) throws(RegistryError) {
        guard (1...1_000_000).contains(maxAttempts) else {
            throw .invalidRetryPolicy("maxAttempts must be 1 through 1000000 (got \(maxAttempts))")
        }
        guard initialDelay >= .zero else {
            throw .invalidRetryPolicy("initialDelay must not be negative (got \(initialDelay))")
        }
        guard multiplier.isFinite, (1...1_000).contains(multiplier) else {
            throw .invalidRetryPolicy("multiplier must be 1 through 1000 (got \(multiplier))")
        }
        guard maxDelay >= initialDelay else {
            throw .invalidRetryPolicy("maxDelay must be at least initialDelay (got \(maxDelay) < \(initialDelay))")
        }
        guard jitter.isFinite, (0...1).contains(jitter) else {
            throw .invalidRetryPolicy("jitter must be 0 through 1 (got \(jitter))")
        }
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
    }

    /// The wait before attempt `attempt` (2 or more), before jitter:
    /// `min(initialDelay × multiplier^(attempt − 2), maxDelay)`.
    ///
    /// May be called from any thread.
    public func delay(beforeAttempt attempt: Int) -> Duration {
        let cap = Double(maxDelay.clampedNanoseconds)
        var delay = Double(initialDelay.clampedNanoseconds)
        var step = 2
        while step < attempt && delay < cap {
            delay *= multiplier
            step += 1
        }
        return .nanoseconds(Int64(min(delay, cap).rounded()))
    }

    /// `3 attempts, 0.1 seconds × 2 up to 10.0 seconds, jitter 0.2`.
    public var description: String {
        "\(maxAttempts) attempts, \(initialDelay) × \(multiplier) up to \(maxDelay), jitter \(jitter)"
    }
}
