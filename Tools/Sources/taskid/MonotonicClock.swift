#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The clock the lease fence is kept by: CLOCK_MONOTONIC, which libuv's loop time also reads,
/// never set back and still running while the process is stopped (SIGSTOP), so that a node
/// that was paused sees the time it lost. A namespace; any thread.
enum MonotonicClock {
    /// Now, in nanoseconds since an arbitrary start.
    static func nanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
