import TaskIdentity
import TaskidRESP

/// `TASK.TRACE`: the registry's trace from a Redis client (see docs/REGISTRY.md, "A timeline of every
/// task"). Front loop only.
extension RegistryServer {
    /// The capacities a trace may have, per loop, as `--trace-capacity` takes them: a client
    /// cannot ask for a ring that outgrows the machine (2^26 events are about 13 GiB, at
    /// `traceMemoryPerEvent`), and under `--maxmemory` it cannot ask for one that does not fit.
    /// Any thread.
    package static let traceCapacities = 1...(1 << 26)

    /// `TASK.TRACE START [capacity]` starts recording on every shard (a new, empty trace;
    /// `capacity` events per shard; by default `clientTraceEvents` in all, split over the
    /// shards, so that a full trace fits a reply) and replies `OK`. `TASK.TRACE DUMP`
    /// replies the trace so far as Trace Event JSON (a bulk string), recording on;
    /// `TASK.TRACE STOP` replies the same and then stops. Both reply null when not recording.
    /// A trace that would not fit the client's output limit is refused with an error before
    /// anything is copied or sent, and recording goes on (see `replyTrace`). The JSON is made
    /// off the loops: other clients never wait for it.
    func traceCommand(
        _ arguments: [ArraySlice<UInt8>], version: RESPVersion, unsentBytes: Int, into out: inout [UInt8]
    ) async throws {
        let subcommand = Self.commandName(arguments[0])
        if front.value.traceReplyInProgress && ["START", "DUMP", "STOP"].contains(subcommand) {
            RESPReply.error("ERR another client's TASK.TRACE DUMP or STOP is being answered; try again", into: &out)
            return
        }
        if configuration.tracePath != nil && (subcommand == "START" || subcommand == "STOP") {
            RESPReply.error(
                "ERR the trace is recorded for the operator's --trace file: TASK.TRACE \(subcommand) would "
                    + "\(subcommand == "START" ? "restart" : "end") it; TASK.TRACE DUMP reads it", into: &out)
            return
        }
        switch (subcommand, arguments.count) {
        case ("START", 1), ("START", 2):
            var capacity = max(1, Self.clientTraceEvents / registry.shards.count)
            if arguments.count == 2 {
                guard let value = Int(String(decoding: arguments[1], as: UTF8.self)),
                    Self.traceCapacities.contains(value)
                else {
                    RESPReply.error(
                        "ERR capacity must be an integer from 1 to \(Self.traceCapacities.upperBound)", into: &out)
                    return
                }
                capacity = value
            }
            if configuration.maxMemoryBytes > 0 {
                let used = memory.value.read().usedBytes
                let needed = capacity * registry.shards.count * Self.traceMemoryPerEvent
                guard used + needed <= configuration.maxMemoryBytes else {
                    RESPReply.error(
                        "OOM a trace of \(capacity) events a loop takes about \(needed) bytes once full; with "
                            + "\(used) bytes in use it would pass --maxmemory (\(configuration.maxMemoryBytes))",
                        into: &out)
                    return
                }
            }
            try await registry.startTrace(capacity: capacity)
            RESPReply.simple("OK", into: &out)
        case ("DUMP", 1), ("STOP", 1):
            front.value.traceReplyInProgress = true
            defer { front.value.traceReplyInProgress = false }
            try await replyTrace(stopping: subcommand == "STOP", version: version, unsentBytes: unsentBytes, into: &out)
        case ("START", _), ("DUMP", _), ("STOP", _):
            RESPReply.error(
                "ERR wrong number of arguments for 'task.trace|\(subcommand.lowercased())' command", into: &out)
        default:
            RESPReply.error(
                "ERR unknown subcommand '\(String(decoding: arguments[0].prefix(128), as: UTF8.self))'. Try START, DUMP or STOP.",
                into: &out)
        }
    }

    /// The events `TASK.TRACE START` records in all, over every shard, when not told: a full
    /// trace of them is about 4 MB of JSON (110 to 130 bytes an event), far within the default
    /// output limit, so `DUMP` and `STOP` can send it. Any thread.
    static let clientTraceEvents = 32_768

    /// The memory one recorded event takes in a full trace ring, as measured (300k SETs with a
    /// ring large enough took 382 MB: about 208 bytes an event). Any thread.
    static let traceMemoryPerEvent = 208

    /// The fewest reply bytes a trace event is counted at before the trace is copied: a
    /// trace of more than the output hard limit over `traceBytesPerEvent` events is refused at
    /// once. A rendered event takes 110 to 130 bytes. Any thread.
    static let traceBytesPerEvent = 64

    /// The most reply bytes a client may have queued: the output buffer's hard limit, or no
    /// limit without one. Any thread.
    private var replyByteLimit: Int {
        let hard = configuration.outputBufferLimit.hardBytes
        return hard > 0 ? hard : Int.max
    }

    /// Replies the trace for `DUMP` (and for `STOP`, which then stops it), or an error when it
    /// would not fit the client's output limit (less what is still unsent on the connection):
    /// first by its event count, before anything is copied, then by its JSON's size. A refused
    /// trace goes on recording, so a refused `STOP` loses nothing. `STOP` replies the trace as
    /// `DUMP` took it, then stops: events recorded while its reply is made are not kept. The events are copied on each shard's loop (at most the count above);
    /// merging them and making the JSON happen on the global executor. Front loop only.
    private func replyTrace(
        stopping: Bool, version: RESPVersion, unsentBytes: Int, into out: inout [UInt8]
    ) async throws {
        // Replies still unsent on the connection count against the limit with this one.
        let limit = replyByteLimit
        let room = max(0, limit - unsentBytes - out.count)
        guard let count = try await registry.traceEventCount() else {
            RESPReply.null(version, into: &out)
            return
        }
        let advice = "recording goes on: save a trace this large with --trace FILE, or START one of fewer events"
        let maxEvents = room / Self.traceBytesPerEvent
        guard count <= maxEvents else {
            RESPReply.error(
                "ERR the trace holds \(count) events, more than the \(maxEvents) a reply within the client "
                    + "output limit (\(limit) bytes) may hold; \(advice)", into: &out)
            return
        }
        let registry = self.registry
        let json = try await Task.detached { try await registry.currentTrace()?.json() }.value
        guard let json else {
            RESPReply.null(version, into: &out)  // stopped by another client meanwhile
            return
        }
        // A bulk string's header and ending: `$<length>\r\n` and `\r\n`.
        let replyBytes = json.utf8.count + String(json.utf8.count).utf8.count + 5
        guard replyBytes <= room else {
            RESPReply.error(
                "ERR the trace is \(replyBytes) bytes as JSON, more than the client output limit "
                    + "(\(limit) bytes); \(advice)", into: &out)
            return
        }
        if stopping { _ = try await Task.detached { try await registry.stopTrace() }.value }
        RESPReply.bulk(json.utf8, into: &out)
    }
}
