import TaskidServer

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The one line of JSON that `taskid serve` prints on standard output once it listens, so that
/// scripts and tests learn the port it bound (also with `--port 0`) without reading its log:
///
///     {"event":"ready","host":"127.0.0.1","port":6380,"loops":2,"version":"0.12.0","pid":1234}
///
/// A value type; any thread may create, encode or decode one.
struct ReadyLine: Codable, Equatable, Sendable {
    /// Always `"ready"`: names the line for readers that see other events later.
    var event = "ready"
    /// The address listened on, as given by `--host`.
    var host: String
    /// The port actually bound: the plain TCP port, or with `--tls-only` the TLS port.
    var port: Int
    /// The TLS port actually bound (`--tls-port`); absent from the line without TLS.
    var tlsPort: Int?
    /// Event loops (registry shards).
    var loops: Int
    /// `taskidVersion`.
    var version = taskidVersion
    /// The server's process id, for the signal that stops it.
    var pid: Int32

    /// The line's keys: `tls_port` as the line spells it.
    enum CodingKeys: String, CodingKey {
        case event, host, port, tlsPort = "tls_port", loops, version, pid
    }

    /// The line's text: compact JSON in a fixed key order, no newline. Any thread.
    var json: String {
        // JSONEncoder's key order is not promised; writing the keys in the documented order
        // keeps the line readable in logs. Strings go through JSONEncoder, which escapes them
        // (encoding a String cannot fail, hence the `try!`).
        let encoder = JSONEncoder()
        func quoted(_ text: String) -> String { String(decoding: try! encoder.encode(text), as: UTF8.self) }
        let tls = tlsPort.map { ",\"tls_port\":\($0)" } ?? ""
        return "{\"event\":\(quoted(event)),\"host\":\(quoted(host)),\"port\":\(port)\(tls),"
            + "\"loops\":\(loops),\"version\":\(quoted(version)),\"pid\":\(pid)}"
    }

    /// Writes the line and its newline to standard output in one `write`, so it is not left in
    /// a buffer when standard output is a pipe.
    ///
    /// Any thread. A failed write is ignored, as `print` would.
    func emit() {
        var line = json + "\n"
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(1, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
