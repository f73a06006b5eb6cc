/// A point in a loop's time: nanoseconds on the monotonic clock (`uv_hrtime`) for `UVLoop`,
/// virtual nanoseconds for `TestLoop`. Arithmetic saturates instead of overflowing.
///
/// A value type; may be used on any thread.
public struct LoopInstant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
    /// Nanoseconds since the loop clock's arbitrary origin.
    public var nanoseconds: UInt64

    /// Creates an instant `nanoseconds` after the clock's origin.
    ///
    /// May be called from any thread.
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The instant `duration` later (or earlier, for a negative duration), clamped to the
    /// representable range instead of overflowing (see `nanoseconds(_:plus:)`).
    public func advanced(by duration: Duration) -> LoopInstant {
        let delta = duration.clampedNanoseconds
        if delta >= 0 {
            return LoopInstant(nanoseconds: Self.nanoseconds(nanoseconds, plus: UInt64(delta)))
        }
        let magnitude = delta.magnitude
        return LoopInstant(nanoseconds: nanoseconds > magnitude ? nanoseconds - magnitude : 0)
    }

    /// `value + delta` nanoseconds, or `UInt64.max` where the sum would overflow.
    ///
    /// Deadline arithmetic uses it instead of `&+`: near the end of a clock's range a wrapped
    /// sum lands in the past, so a timer or sleep meant for later would fire at once.
    /// Saturating at `UInt64.max` means "at the end of time", which is never early. The
    /// registry's deadlines use it on their hot paths (hence `@inlinable`: a compare and a
    /// select).
    ///
    /// May be called from any thread.
    @inlinable @inline(__always)
    package static func nanoseconds(_ value: UInt64, plus delta: UInt64) -> UInt64 {
        let (sum, overflow) = value.addingReportingOverflow(delta)
        return overflow ? .max : sum
    }

    /// The duration from this instant to `other` (negative if `other` is earlier).
    public func duration(to other: LoopInstant) -> Duration {
        if other.nanoseconds >= nanoseconds {
            return .nanoseconds(UInt64ToInt64Clamped(other.nanoseconds - nanoseconds))
        }
        return .nanoseconds(-UInt64ToInt64Clamped(nanoseconds - other.nanoseconds))
    }

    /// Orders instants by time.
    public static func < (lhs: LoopInstant, rhs: LoopInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant in milliseconds, for logs.
    public var description: String { "LoopInstant(\(Double(nanoseconds) / 1e6) ms)" }
}

@inline(__always)
private func UInt64ToInt64Clamped(_ value: UInt64) -> Int64 { value > UInt64(Int64.max) ? .max : Int64(value) }

extension Duration {
    /// The duration in whole nanoseconds (sub-nanosecond parts dropped), clamped to `Int64`.
    package var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}

/// The `Clock` of a loop: `now` reads the loop's time and `sleep(until:tolerance:)` sleeps on a
/// loop timer, so that the same code runs on `UVLoop` (real time) and `TestLoop` (virtual time).
///
/// Resolution is one millisecond, libuv's timer resolution: a sleep ends at the first
/// loop turn at or after its deadline, never before it, and usually within a millisecond after.
/// A value type; `now` and `sleep` may be called from any thread.
public struct LoopClock: Clock, Sendable {
    /// The instant type of a loop clock.
    public typealias Instant = LoopInstant

    /// The loop whose time and timers this clock uses.
    public let loop: any TaskLoop

    /// Creates the clock of `loop` (the same as `loop.clock`).
    ///
    /// May be called from any thread.
    public init(loop: any TaskLoop) { self.loop = loop }

    /// The loop's current time. May be called from any thread.
    public var now: LoopInstant { loop.now }

    /// One millisecond: libuv timers have millisecond resolution.
    public var minimumResolution: Duration { .milliseconds(1) }

    /// Suspends until the loop's time reaches `deadline`; never returns before it.
    ///
    /// - Parameters:
    ///   - deadline: when to resume.
    ///   - tolerance: ignored; the loop fires timers at millisecond resolution anyway.
    /// - Throws: `CancellationError` at once if the task is cancelled (the timer is stopped) or
    ///   if the loop shuts down while sleeping; `LoopError` (`.notStarted`, `.shutDown`) if the
    ///   loop cannot take timers.
    /// - Note: May be called from any task; the timer lives on the loop thread.
    public func sleep(until deadline: LoopInstant, tolerance: Duration? = nil) async throws {
        try await loop.sleep(until: deadline)
    }
}
