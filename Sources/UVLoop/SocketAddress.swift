import CLibUV

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Parses an IP literal (or `localhost`) into a socket address.
///
/// - Throws: `LoopError` with libuv's `EINVAL` for a port outside 0...65535 or a host that is
///   not an IPv4 or IPv6 literal.
/// - Note: May be called from any thread.
func socketAddress(host: String, port: Int) throws(LoopError) -> sockaddr_storage {
    guard (0...65_535).contains(port) else { throw LoopError(.libuv(-EINVAL), operation: "port \(port)") }
    var storage = sockaddr_storage()
    let literal = host == "localhost" ? "127.0.0.1" : host
    // sockaddr_storage is large and aligned enough for sockaddr_in/_in6, as the C API assumes.
    let result: Int32 = withUnsafeMutablePointer(to: &storage) { pointer in
        if literal.contains(":") {
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                uv_ip6_addr(literal, Int32(port), $0)
            }
        }
        return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
            uv_ip4_addr(literal, Int32(port), $0)
        }
    }
    try LoopError.check(result, "address \(host)")
    return storage
}

/// Runs `body` with `storage` seen as the `sockaddr` the C API takes. May be called from any
/// thread.
func withSockaddr<Result>(
    // `body` gets a pointer scoped to the call, never kept.
    _ storage: inout sockaddr_storage, _ body: (UnsafePointer<sockaddr>) throws(LoopError) -> Result
) throws(LoopError) -> Result {
    // sockaddr_storage viewed as the sockaddr the C API takes; scoped to the call.
    try withUnsafeMutablePointer(to: &storage) { (pointer) throws(LoopError) -> Result in
        try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(LoopError) -> Result in
            try body(address)
        }
    }
}

/// The port of an IPv4 or IPv6 address the kernel wrote (`getsockname`). May be called from
/// any thread.
func port(of storage: sockaddr_storage) -> Int {
    var storage = storage
    let family = storage.ss_family
    // Read back as the family the kernel wrote (checked just above).
    return withUnsafePointer(to: &storage) { pointer in
        if family == sa_family_t(AF_INET6) {
            return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                Int(UInt16(bigEndian: $0.pointee.sin6_port))
            }
        }
        return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
            Int(UInt16(bigEndian: $0.pointee.sin_port))
        }
    }
}
