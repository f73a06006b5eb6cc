import TaskIdentity
import TaskidCluster
import TaskidRESP

/// What a `SET` starts for its key: the work whose result `GET` returns. A value type; any thread.
package enum ServerWork: Sendable, Equatable, CustomStringConvertible {
    /// Hold the run for a while on the loop's timer, then commit: a synchronous run (no Swift
    /// task); cancellation ends it at once and its commit never happens.
    case sleep(milliseconds: Int)
    /// The same work as a Swift task per run that sleeps on the loop's clock (cancellation
    /// wakes it with `CancellationError`): the general path, for comparison.
    case taskSleep(milliseconds: Int)
    /// One request to another server (`PING`, one reply read); cancellation closes that connection.
    case upstream(host: String, port: Int)

    /// Parses `sleep:MS`, `task-sleep:MS` or `upstream:HOST:PORT`; nil for anything else.
    package init?(argument: String) {
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

    package var description: String {
        switch self {
        case .sleep(let milliseconds): return "sleep:\(milliseconds)"
        case .taskSleep(let milliseconds): return "task-sleep:\(milliseconds)"
        case .upstream(let host, let port): return "upstream:\(host):\(port)"
        }
    }
}

/// `taskid serve`'s settings. A value type; any thread.
package struct ServerConfiguration: Sendable, Equatable {
    package var host = "127.0.0.1"
    package var port = 6380
    package var loops = 1
    package var debounceMilliseconds = 0
    /// `--max-wait-ms`: the bound of a debounce window that keeps re-opening; 0 for none.
    package var maxWaitMilliseconds = 0
    /// `--shutdown-grace-ms`: at a stop, how long runs under way may take to finish before they
    /// are cancelled (`shutdown(gracePeriod:)`); 0: cancelled at once.
    package var shutdownGraceMilliseconds = 0
    /// Each run's time limit (`--timeout-ms`); 0 for none.
    package var timeoutMilliseconds = 0
    /// How many runs may hold a place at once on each loop (`--max-running`); 0 for no limit.
    package var maxRunning = 0
    /// How many SETs may wait for a place on each loop (`--max-queued`); nil for no bound.
    package var maxQueued: Int?
    /// What a full queue sheds (`--shed`): the newcomer, or (false) the oldest queued.
    package var shedsNewest = false
    package var work = ServerWork.sleep(milliseconds: 10)
    package var maxClients = 10_000
    /// How long a refused client (`--max-clients`, protected mode) may take to read its
    /// answer before its connection is closed; over TLS, counted after the handshake.
    package var refusalAnswerTimeLimit = Duration.seconds(1)
    /// How long a refused TLS client's handshake may take before its connection is closed
    /// unanswered. Longer than the answer's limit: a handshake takes round trips and, on a
    /// busy server, public-key work.
    package var refusalHandshakeTimeLimit = Duration.seconds(10)
    /// `--tls-port` and its certificate, key and CA; nil for no TLS.
    package var tls: TLSSettings?
    /// The longest argument, the most request bytes a client may hold unexecuted, and the most
    /// arguments one request may have (`--proto-max-bulk-len`, `--client-query-buffer-limit`,
    /// `--max-arguments`); Redis's limits by default.
    package var requestLimits = RESPLimits()
    /// The most bytes one client's `MULTI` queue may account for (its commands' bytes plus 4 per
    /// argument and per command); a command past it is refused and dooms the transaction.
    package var maxTransactionBytes = Self.defaultMaxTransactionBytes
    /// The default of `maxTransactionBytes`: 64 MiB (about a million queued `SET`s).
    package static let defaultMaxTransactionBytes = 64 << 20
    /// The limits on replies queued for a client that does not read them, past which it is
    /// disconnected (`--client-output-buffer-limit`).
    package var outputBufferLimit = OutputBufferLimit.standard
    /// How long a graceful stop waits for clients to take the replies they are owed.
    package var drainTimeoutMilliseconds = 5_000
    /// `--work upstream:`: time-outs for connecting and for the reply, and the most upstream
    /// connections open at once (over all loops).
    package var upstreamConnectTimeoutMilliseconds = 1_000
    package var upstreamReplyTimeoutMilliseconds = 5_000
    package var upstreamMaxConnections = 256
    /// `--maxmemory`: past this many bytes in use (`used_memory`), writes are refused with
    /// `-OOM` (Redis's `noeviction`); 0 for no bound.
    package var maxMemoryBytes = 0
    /// The users and what they may run (`--requirepass`, `--acl-file`).
    package var access = AccessControl()
    /// `--protected-mode`: while clients need no password, only loopback clients are served.
    package var protectedMode = true
    /// `--trace FILE`: every shard records its trace from the start, written here (merged) at
    /// shutdown; nil for none. `TASK.TRACE` works either way.
    package var tracePath: String?
    /// `--trace-capacity`: each shard's trace ring, in events.
    package var traceCapacity = RegistryTrace.defaultCapacity
    /// `--cluster-config` and `--cluster-node`: the static cluster this node belongs to; nil
    /// for a standalone server, which serves every key.
    package var cluster: ClusterConfiguration?
    /// `--etcd` and its settings: the slot map lives in etcd, claimed on this node's lease
    /// (`EtcdOwnership`); `cluster` is then this node's view of it. nil for a static or a
    /// standalone server.
    package var etcd: EtcdSettings?

    /// The defaults.
    package init() {}
}
