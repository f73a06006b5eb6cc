import CLibUV

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The address of a connection's peer, as the kernel reports it (`getpeername`). A value type;
/// any thread.
public struct TCPPeerAddress: Sendable, Equatable, CustomStringConvertible {
    /// The IP address as text: `127.0.0.1`, `::1`, `192.0.2.7`. An IPv4 peer of an IPv6
    /// socket shows as IPv4 (`::ffff:` dropped).
    public let host: String
    /// The peer's port.
    public let port: Int
    /// Whether the peer is this host's loopback: `127.0.0.0/8` or `::1`.
    public let isLoopback: Bool

    /// `host:port`, with an IPv6 host in brackets (`[::1]:6380`). Any thread.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Reads an address the kernel wrote; nil for a family other than IPv4 and IPv6.
    init?(_ storage: sockaddr_storage) {
        var storage = storage
        let family = Int32(storage.ss_family)
        var text = [CChar](repeating: 0, count: 64)
        // Read back as the family the kernel wrote (checked here); scoped to the call.
        let parsed: (String, Int, Bool)? = withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET {
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var copy = address.pointee
                    guard uv_ip4_name(&copy, &text, text.count) == 0 else { return nil }
                    let firstOctet = UInt32(bigEndian: address.pointee.sin_addr.s_addr) >> 24
                    return (Self.string(text), Int(UInt16(bigEndian: address.pointee.sin_port)), firstOctet == 127)
                }
            }
            if family == AF_INET6 {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var copy = address.pointee
                    guard uv_ip6_name(&copy, &text, text.count) == 0 else { return nil }
                    var host = Self.string(text)
                    if host.hasPrefix("::ffff:") && host.contains(".") { host.removeFirst("::ffff:".count) }
                    let isLoopback = host == "::1" || host.hasPrefix("127.")
                    return (host, Int(UInt16(bigEndian: address.pointee.sin6_port)), isLoopback)
                }
            }
            return nil
        }
        guard let (host, port, isLoopback) = parsed else { return nil }
        self.host = host
        self.port = port
        self.isLoopback = isLoopback
    }
}

extension TCPPeerAddress {
    /// The text of a NUL-terminated C string written into `characters`.
    fileprivate static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension TCPSocket {
    /// The peer's address; nil once closed or when the kernel cannot tell. Loop thread only
    /// (checked while open).
    var peerAddress: TCPPeerAddress? {
        guard isOpen else { return nil }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        // sockaddr_storage viewed as the sockaddr the C API takes; scoped to the call.
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(handle, $0, &length) }
        }
        guard result == 0 else { return nil }
        return TCPPeerAddress(storage)
    }
}

extension TCPConnection {
    /// The address of the peer: for logs, and to tell a loopback client from others. nil once
    /// closed, or when the kernel cannot tell.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the connection is open).
    public var peerAddress: TCPPeerAddress? { socket.peerAddress }
}
