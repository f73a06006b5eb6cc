#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The clock the lease fence is kept by, never set back and still running while the process
/// is stopped (SIGSTOP) and, on Linux, while the machine is suspended (CLOCK_BOOTTIME: etcd's
/// clock runs on meanwhile, so the fence must see that time pass too; CLOCK_MONOTONIC stops).
/// A namespace; any thread.
package enum MonotonicClock {
    /// Now, in nanoseconds since an arbitrary start.
    package static func nanoseconds() -> UInt64 {
        var time = timespec()
        #if os(Linux)
            clock_gettime(CLOCK_BOOTTIME, &time)
        #else
            clock_gettime(CLOCK_MONOTONIC, &time)
        #endif
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
