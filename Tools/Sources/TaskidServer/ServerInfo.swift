import TaskIdentity
import UVLoop

/// `INFO`: the server's settings, its clients and the registry's counters.
extension RegistryServer {
    /// The registry's counters in Redis's INFO format. Front loop only.
    func info() async throws -> String {
        let total = try await registry.countersSnapshot()
        // On the front loop already (INFO runs there), so reading the client count does not
        // suspend: with one loop, INFO inside EXEC stays in the loop's turn.
        let clients = clientCount
        let figures = memory.value.read()
        let lines =
            [
                "# Server", "taskid_version:\(taskidVersion)", "tcp_port:\(port)", "tls_port:\(tlsPort)",
                "loops:\(registry.shards.count)",
                "work:\(configuration.work)", "debounce_ms:\(configuration.debounceMilliseconds)",
                "max_wait_ms:\(configuration.maxWaitMilliseconds)",
                "timeout_ms:\(configuration.timeoutMilliseconds)", "max_running:\(configuration.maxRunning)",
                "max_queued:\(configuration.maxQueued ?? -1)",
                "shed:\(configuration.shedsNewest ? "newest" : "oldest")",
                "", "# Clients", "connected_clients:\(clients)", "maxclients:\(configuration.maxClients)",
                "", "# Memory", "used_memory:\(figures.usedBytes)", "used_memory_rss:\(figures.residentBytes)",
                "mem_fragmentation_ratio:\(Self.twoDecimals(figures.fragmentationRatio))",
                "allocator_free_held:\(figures.freeHeldBytes)", "maxmemory:\(configuration.maxMemoryBytes)",
                "maxmemory_policy:noeviction",
                "", "# Stats", "total_commands_processed:\(commandsProcessed)",
                "", "# Cluster", "cluster_enabled:\(cluster == nil ? 0 : 1)",
                "", "# Registry",
            ]
            // The registry's own field list: INFO shows every counter, named as the metrics are.
            + RegistryCounters.fields.map { "\($0.name):\($0.value(total))" }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// `value` with two decimals, as Redis prints a ratio (`1.07`), without Foundation.
    static func twoDecimals(_ value: Double) -> String {
        guard value.isFinite, value >= 0, value < 1e15 else { return "0.00" }
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
