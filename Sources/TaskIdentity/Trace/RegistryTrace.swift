#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A registry's recorded trace (`TaskRegistry.startTrace`): its latest events, oldest first,
/// and how many older ones the ring dropped to stay within its capacity. Export it with
/// `json()` or `write(toFile:)` in the Trace Event format, which Perfetto
/// (https://ui.perfetto.dev, "Open trace file") and `chrome://tracing` open, or draw it with
/// `scripts/trace-png`.
///
/// A value; may be used on any thread.
public struct RegistryTrace: Sendable {
    /// The ring's size when `startTrace` is given none: 65,536 events, about 8 MiB (a key or
    /// identity larger than three words also takes a box of its own per event).
    public static let defaultCapacity = 65_536

    let events: [TraceEvent]
    /// Events dropped, the oldest first, to keep the trace within `capacity`.
    public let droppedEvents: UInt64
    /// The most events the trace keeps.
    public let capacity: Int
    /// The loop time the trace was taken at (nanoseconds): runs and windows still open end
    /// here in the export.
    let endTime: UInt64

    /// How many events the trace holds (at most `capacity`).
    public var eventCount: Int { events.count }

    /// One line per event, oldest first: `12ms key g3 cancelled(identityChanged)`, the time
    /// being the loop's clock (from 0 on a `TestLoop`; the process's monotonic clock on a
    /// `UVLoop`). For logs and tests; the format may change.
    public var lines: [String] { events.map(\.description) }

    init(events: [TraceEvent], droppedEvents: UInt64, capacity: Int, endTime: UInt64) {
        self.events = events
        self.droppedEvents = droppedEvents
        self.capacity = capacity
        self.endTime = endTime
    }

    /// One trace of several registries (the shards of a `ShardedTaskRegistry`): their events
    /// in time order (a shard's own order kept for equal times), their dropped events and
    /// capacities added up. Their loops' clocks must be one clock, as `UVLoop`s' are (the
    /// process's monotonic clock). May be called from any thread.
    public init(merging traces: [RegistryTrace]) {
        var merged = traces.flatMap(\.events).enumerated().map { ($0.offset, $0.element) }
        merged.sort { $0.1.time != $1.1.time ? $0.1.time < $1.1.time : $0.0 < $1.0 }
        self.init(
            events: merged.map(\.1), droppedEvents: traces.reduce(0) { $0 + $1.droppedEvents },
            capacity: traces.reduce(0) { total, trace in
                let (sum, overflow) = total.addingReportingOverflow(trace.capacity)
                return overflow ? Int.max : sum
            }, endTime: traces.map(\.endTime).max() ?? 0)
    }
}

/// Why `RegistryTrace.write(toFile:)` failed.
public struct TraceWriteError: Error, Sendable, CustomStringConvertible {
    /// The file.
    public let path: String
    /// The C library's `errno` for the call that failed.
    public let errno: Int32

    /// For example `cannot write trace to /nope/t.json: No such file or directory (errno 2)`.
    public var description: String {
        "cannot write trace to \(path): \(String(cString: strerror(errno))) (errno \(errno))"
    }
}

extension RegistryTrace {
    /// Writes `json()` to the file at `path`, replacing it.
    ///
    /// - Throws: `TraceWriteError` with the C library's reason when the file cannot be
    ///   created or written.
    /// - Note: May be called from any thread; it blocks that thread while it writes, so call it
    ///   off the loop thread for a large trace.
    public func write(toFile path: String) throws(TraceWriteError) {
        let text = json()
        guard let file = fopen(path, "w") else { throw TraceWriteError(path: path, errno: errno) }
        var utf8 = text.utf8CString
        let length = utf8.count - 1  // without the terminating NUL
        let written = utf8.withUnsafeMutableBufferPointer { fwrite($0.baseAddress, 1, length, file) }
        let writeError = written == length ? 0 : errno
        if fclose(file) != 0 && writeError == 0 { throw TraceWriteError(path: path, errno: errno) }
        if writeError != 0 { throw TraceWriteError(path: path, errno: writeError) }
    }
}
