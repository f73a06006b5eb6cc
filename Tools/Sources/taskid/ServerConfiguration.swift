import TaskIdentity

/// What a `SET` starts for its key: the work whose result `GET` returns. A value type; any thread.
enum ServerWork: Sendable, Equatable, CustomStringConvertible {
    /// Hold the run for a while on the loop's timer, then commit: a synchronous run (no Swift
    /// task); cancellation ends it at once and its commit never happens.
    case sleep(milliseconds: Int)
    /// The same work as a Swift task per run that sleeps on the loop's clock (cancellation
    /// wakes it with `CancellationError`): the general path, for comparison.
    case taskSleep(milliseconds: Int)
    /// One request to another server (`PING`, one reply read); cancellation closes that connection.
    case upstream(host: String, port: Int)

    /// Parses `sleep:MS`, `task-sleep:MS` or `upstream:HOST:PORT`; nil for anything else.
    init?(argument: String) {
        let parts = argument.split(separator: ":", maxSplits: 1).map(String.init)
        if parts.count == 2, parts[0] == "sleep", let milliseconds = Int(parts[1]), milliseconds >= 0 {
            self = .sleep(milliseconds: milliseconds)
        } else if parts.count == 2, parts[0] == "task-sleep", let milliseconds = Int(parts[1]), milliseconds >= 0 {
            self = .taskSleep(milliseconds: milliseconds)
        } else if parts.count == 2, parts[0] == "upstream", let colon = parts[1].lastIndex(of: ":"),
            let port = Int(parts[1][parts[1].index(after: colon)...]), (1...65_535).contains(port)
        {
            self = .upstream(host: String(parts[1][..<colon]), port: port)
        } else {
            return nil
        }
    }

    var description: String {
        switch self {
        case .sleep(let milliseconds): return "sleep:\(milliseconds)"
        case .taskSleep(let milliseconds): return "task-sleep:\(milliseconds)"
        case .upstream(let host, let port): return "upstream:\(host):\(port)"
        }
    }
}

/// `taskid serve`'s settings. A value type; any thread.
struct ServerConfiguration: Sendable, Equatable {
    var host = "127.0.0.1"
    var port = 6380
    var loops = 1
    var debounceMilliseconds = 0
    /// Each run's time limit (`--timeout-ms`); 0 for none.
    var timeoutMilliseconds = 0
    /// How many runs may hold a place at once on each loop (`--max-running`); 0 for no limit.
    var maxRunning = 0
    var work = ServerWork.sleep(milliseconds: 10)
    var maxClients = 10_000
    /// How long a refused client (`--max-clients`, protected mode) may take to read its
    /// answer before its connection is closed; over TLS, counted after the handshake.
    var refusalAnswerTimeLimit = Duration.seconds(1)
    /// How long a refused TLS client's handshake may take before its connection is closed
    /// unanswered. Longer than the answer's limit: a handshake takes round trips and, on a
    /// busy server, public-key work.
    var refusalHandshakeTimeLimit = Duration.seconds(10)
    /// `--tls-port` and its certificate, key and CA; nil for no TLS.
    var tls: TLSSettings?
    /// The longest argument, the most request bytes a client may hold unexecuted, and the most
    /// arguments one request may have (`--proto-max-bulk-len`, `--client-query-buffer-limit`,
    /// `--max-arguments`); Redis's limits by default.
    var requestLimits = RESPLimits()
    /// The most bytes one client's `MULTI` queue may account for (its commands' bytes plus 4 per
    /// argument and per command); a command past it is refused and dooms the transaction.
    var maxTransactionBytes = Self.defaultMaxTransactionBytes
    /// The default of `maxTransactionBytes`: 64 MiB (about a million queued `SET`s).
    static let defaultMaxTransactionBytes = 64 << 20
    /// The limits on replies queued for a client that does not read them, past which it is
    /// disconnected (`--client-output-buffer-limit`).
    var outputBufferLimit = OutputBufferLimit.standard
    /// How long a graceful stop waits for clients to take the replies they are owed.
    var drainTimeoutMilliseconds = 5_000
    /// `--work upstream:`: time-outs for connecting and for the reply, and the most upstream
    /// connections open at once (over all loops).
    var upstreamConnectTimeoutMilliseconds = 1_000
    var upstreamReplyTimeoutMilliseconds = 5_000
    var upstreamMaxConnections = 256
    /// `--maxmemory`: past this many bytes in use (`used_memory`), writes are refused with
    /// `-OOM` (Redis's `noeviction`); 0 for no bound.
    var maxMemoryBytes = 0
    /// The users and what they may run (`--requirepass`, `--acl-file`).
    var access = AccessControl()
    /// `--protected-mode`: while clients need no password, only loopback clients are served.
    var protectedMode = true
    /// `--trace FILE`: every shard records its trace from the start, written here (merged) at
    /// shutdown; nil for none. `TASK.TRACE` works either way.
    var tracePath: String?
    /// `--trace-capacity`: each shard's trace ring, in events.
    var traceCapacity = RegistryTrace.defaultCapacity
    /// `--cluster-config` and `--cluster-node`: the static cluster this node belongs to; nil
    /// for a standalone server, which serves every key.
    var cluster: ClusterConfiguration?
    /// `--etcd` and its settings: the slot map lives in etcd, claimed on this node's lease
    /// (`EtcdOwnership`); `cluster` is then this node's view of it. nil for a static or a
    /// standalone server.
    var etcd: EtcdSettings?
}
