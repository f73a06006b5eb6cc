import TaskIdentity

/// `TASK.TRACE`: the registry's trace from a Redis client (see docs/REGISTRY.md, "A timeline of every
/// task"). Front loop only.
extension RegistryServer {
    /// The capacities a trace may have, per loop, as `--trace-capacity` takes them: a client
    /// cannot ask for a ring that outgrows the machine (2^26 events are about 8 GiB). Any thread.
    static let traceCapacities = 1...(1 << 26)

    /// `TASK.TRACE START [capacity]` starts recording on every shard (a new, empty trace;
    /// `capacity` events per shard, 65,536 by default) and replies `OK`. `TASK.TRACE DUMP`
    /// replies the trace so far as Trace Event JSON (a bulk string), recording on;
    /// `TASK.TRACE STOP` replies it and stops. Both reply null when not recording. Save one
    /// with `redis-cli --raw TASK.TRACE STOP > trace.json`; a trace larger than the client's
    /// output limit (8 MiB) ends the connection: record a large one with `--trace FILE`. The
    /// JSON is made on the front loop, whose other clients wait meanwhile (tens of
    /// milliseconds for a full default ring).
    func traceCommand(_ arguments: [ArraySlice<UInt8>], version: RESPVersion, into out: inout [UInt8]) async throws {
        let subcommand = Self.commandName(arguments[0])
        switch (subcommand, arguments.count) {
        case ("START", 1), ("START", 2):
            var capacity = RegistryTrace.defaultCapacity
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
            try await registry.startTrace(capacity: capacity)
            RESPReply.simple("OK", into: &out)
        case ("DUMP", 1), ("STOP", 1):
            let trace = subcommand == "STOP" ? try await registry.stopTrace() : try await registry.currentTrace()
            if let trace {
                RESPReply.bulk(trace.json().utf8, into: &out)
            } else {
                RESPReply.null(version, into: &out)
            }
        case ("START", _), ("DUMP", _), ("STOP", _):
            RESPReply.error(
                "ERR wrong number of arguments for 'task.trace|\(subcommand.lowercased())' command", into: &out)
        default:
            RESPReply.error(
                "ERR unknown subcommand '\(String(decoding: arguments[0].prefix(128), as: UTF8.self))'. Try START, DUMP or STOP.",
                into: &out)
        }
    }
}
