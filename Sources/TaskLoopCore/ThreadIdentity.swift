#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The calling thread's identity as a word, for storing in an atomic and comparing with `==`.
///
/// `pthread_t` is an integer on Linux and a pointer on Darwin; both are unique among live
/// threads and stable for a thread's lifetime, which is all a loop's "am I on my thread?" check
/// needs. Never 0 for a live thread, so 0 can mean "no thread yet".
///
/// May be called from any thread.
@inline(__always)
@inlinable
package func currentThreadID() -> UInt {
    #if canImport(Darwin)
        return UInt(bitPattern: pthread_self())
    #else
        return UInt(pthread_self())
    #endif
}
