import UVLoop

/// One connected client, as the front loop tracks it. Front loop only.
package struct ClientEntry {
    let connection: TCPConnection
    let task: Task<Void, Never>
    /// Stopping: every reply it is owed is in the kernel; only the peer's close is awaited.
    var repliesHandedOver = false
}

/// What a graceful stop delivered and what it dropped. A value type; any thread.
package struct DrainReport: Sendable, Equatable {
    /// Clients connected when the stop began.
    package var clients: Int
    /// Clients closed at the drain time-out with replies still unsent.
    package var droppedClients = 0
    /// Reply bytes those clients were owed and did not get.
    package var droppedBytes = 0
    /// Why the `--trace` file could not be written at the end of the stop; nil when it was, or
    /// when there was none to write.
    package var traceFailure: String?

    /// Whether every reply owed was delivered.
    package var isComplete: Bool { droppedClients == 0 }

    /// This report's drops, for a stop that began with `clients` clients.
    func adding(clients: Int) -> DrainReport {
        var report = self
        report.clients = clients
        return report
    }
}

/// `RegistryServer`'s mutable state. Front loop only (kept in a `LoopBound`).
package struct FrontLoopState {
    var listener: TCPListener?
    var acceptTask: Task<Void, Never>?
    /// `--tls-port`'s listener and accept loop, and the context its sessions share.
    var tlsListener: TCPListener?
    var tlsAcceptTask: Task<Void, Never>?
    let tls: TLSContext?
    /// `watchMemory`, until the stop cancels it.
    var memoryTask: Task<Void, Never>?
    var clients: [UInt64: ClientEntry] = [:]
    /// Clients the drain closed before its time-out with replies unsent.
    var droppedWhileDraining = DrainReport(clients: 0)
    var nextClientID: UInt64 = 1  // as Redis, client ids start at 1
    /// Clients past `--max-clients` being answered and closed (`refuse`), by number.
    var refusals: [UInt64: Task<Void, Never>] = [:]
    /// Protected mode's refusals and failed logins: each logged a line a second at most.
    var protectedModeLog = RateLimitedLog()
    var failedLoginLog = RateLimitedLog()
    var nextRefusalNumber: UInt64 = 0
    /// Requests executed so far, counted per turn (INFO's `total_commands_processed`).
    var commandsProcessed = 0
    var stopping = false
    /// A `TASK.TRACE DUMP` or `STOP` reply is being made (it awaits the shards and a render
    /// off the loop): other `TASK.TRACE` commands are refused meanwhile, so that none starts,
    /// dumps or stops the trace between its size check and its stop.
    var traceReplyInProgress = false
    /// On etcd, the number of the view of the cluster served now (`updateCluster`).
    var clusterViewNumber: UInt64 = 0

    /// No client yet; TLS sessions made from `tls`, if given.
    init(tls: TLSContext? = nil) { self.tls = tls }
}

/// The log of an event a client can repeat at will (a refused host, a wrong password): the
/// first is logged, then a line a second at most with how many came since, so that a client
/// cannot flood the log. A value type; its owner's thread.
struct RateLimitedLog {
    /// When the last line was logged (`MonotonicClock`); 0 before the first.
    private var loggedAt: UInt64 = 0
    private var unlogged = 0

    /// Counts one event at `now`; returns how many events the line due now reports (this one
    /// included), or nil when no line is due.
    mutating func note(at now: UInt64) -> Int? {
        unlogged += 1
        guard loggedAt == 0 || now &- loggedAt >= 1_000_000_000 else { return nil }
        defer {
            loggedAt = now
            unlogged = 0
        }
        return unlogged
    }
}
