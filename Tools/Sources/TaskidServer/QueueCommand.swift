import TaskIdentity
import TaskidRESP

/// `TASK.QUEUE`: the runs under way and the queue of `--max-running`, over every loop.
extension RegistryServer {
    /// Replies with a flat array of names and integers, as `CONFIG GET` does:
    /// `queued` (SETs waiting for a place), `running` (runs under way, cancelled ones that
    /// have not returned included), `max_running` (the cap over every loop: `--max-running`
    /// times the loops; 0 for none), `oldest_wait_ms` (how long the key that has waited
    /// longest has been queued; 0 when none waits), `max_queued` (`--max-queued` times the
    /// loops; -1 for no bound) and `shed` (SETs the full queue shed). Front loop only.
    func queueCommand(into out: inout [UInt8]) async throws {
        let fields: [(String, Int)]
        if let runLimit {
            let state = try await registry.limitStateSnapshot(of: runLimit)
            let wait = state.oldestWait.map { Int($0 / .milliseconds(1)) } ?? 0
            fields = [
                ("queued", state.queued), ("running", state.running), ("max_running", state.maxRunning),
                ("oldest_wait_ms", wait), ("max_queued", state.maxQueued ?? -1), ("shed", Int(state.shed)),
            ]
        } else {
            let counters = try await registry.countersSnapshot()
            fields = [
                ("queued", 0), ("running", counters.runningActions), ("max_running", 0), ("oldest_wait_ms", 0),
                ("max_queued", -1), ("shed", 0),
            ]
        }
        RESPReply.arrayHeader(fields.count * 2, into: &out)
        for (name, value) in fields {
            RESPReply.bulk(name.utf8, into: &out)
            RESPReply.integer(value, into: &out)
        }
    }
}
