import TaskIdentity
import UVLoop

/// `INFO`: the server's settings, its clients and the registry's counters.
extension RegistryServer {
    /// The registry's counters in Redis's INFO format. Any task.
    func info() async throws -> String {
        var total = RegistryCounters()
        for shard in shards { total = total + (try await shard.onLoop { shard.registry.counters }) }
        let clients = try await frontLoop.submit { self.clientCount }
        let lines = [
            "# Server", "taskid_version:\(taskidVersion)", "tcp_port:\(port)", "loops:\(shards.count)",
            "work:\(configuration.work)", "debounce_ms:\(configuration.debounceMilliseconds)",
            "", "# Clients", "connected_clients:\(clients)", "maxclients:\(configuration.maxClients)",
            "", "# Registry", "declared:\(total.declared)", "unchanged:\(total.unchanged)", "started:\(total.started)",
            "restarted:\(total.restarted)", "coalesced:\(total.coalesced)", "cancelled:\(total.cancelled)",
            "finished:\(total.finished)", "failed:\(total.failed)",
            "stale_commits_dropped:\(total.staleCommitsDropped)",
            "live_slots:\(total.liveSlots)", "running_actions:\(total.runningActions)",
            "live_generations:\(total.liveGenerations)",
        ]
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
