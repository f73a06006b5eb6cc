import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TaskIdentity
import TaskidCluster
import TaskidRESP
import TaskidServer

/// `taskid serve`: parses the server's options into a `ServerConfiguration` and runs the server
/// as a `Service` in a `ServiceGroup` whose graceful shutdown signals are SIGTERM and SIGINT.
/// Parsed and run on the main task.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serves a task registry over RESP2 and RESP3 (the Redis protocol).",
        discussion: """
            SET key id declares the key's task with that identity (restarting it when the id \
            changes); GET key returns the id whose run finished last, and its generation.

            Once listening, one line of JSON goes to standard output, e.g. \
            {"event":"ready","host":"127.0.0.1","port":6380,"loops":1,"version":"\(taskidVersion)","pid":1234} \
            (the port actually bound, also with --port 0). The log goes to standard error. \
            SIGINT or SIGTERM shuts down gracefully: no new connections, every client's requests \
            already received are answered and the replies delivered (within --drain-timeout-ms), \
            then exit 0; exit 1 if some replies could not be delivered in time (the log says how \
            many bytes to how many clients).
            """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(
        help: ArgumentHelp(
            "Record the registry's trace from the start, and write what is recording at shutdown to FILE (Trace Event JSON; TASK.TRACE START restarts it, STOP ends it).",
            valueName: "FILE"))
    var trace: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "With --trace: each shard's trace ring, in events (older ones are dropped and counted). Default: \(RegistryTrace.defaultCapacity)."
        ))
    var traceCapacity: Int?

    @Option(
        parsing: .unconditional,
        help: """
            Port (0 picks a free one; the ready line tells which). Default: 6380, or in a \
            cluster the node's port in --cluster-config.
            """)
    var port: Int?

    @Option(
        parsing: .unconditional, help: "Event loops (registry shards), one thread each (1...64).")
    var loops = 1

    @Option(
        name: .customLong("debounce-ms"), parsing: .unconditional,
        help: "Debounce window of every SET, in milliseconds.")
    var debounceMilliseconds = 0

    @Option(
        name: .customLong("timeout-ms"),
        parsing: .unconditional,
        help: ArgumentHelp(
            "Time limit of every run, in milliseconds (0: none).",
            discussion: """
                A run still running when it passes is cancelled: GET keeps the key's last \
                finished id, TASK.PHASE answers cancelled(timedOut), and a SET of the same id \
                again does nothing. With sleep:MS, a limit of at least MS never fires.
                """))
    var timeoutMilliseconds = 0

    @Option(
        name: .customLong("max-running"),
        parsing: .unconditional,
        help: ArgumentHelp(
            "Runs at once on each loop, at most (0: no limit).",
            discussion: """
                A SET whose run would pass it waits in the loop's queue, TASK.PHASE answers \
                waiting, and a newer SET of the key replaces it (never running it) at the back. A \
                run holds its place until it returns, cancelled or not. TASK.QUEUE shows the \
                queue.
                """))
    var maxRunning = 0

    @Option(
        help: ArgumentHelp(
            "What a SET runs: sleep:MS, task-sleep:MS or upstream:HOST:PORT.",
            discussion: """
                sleep:MS is held MS on the loop's timer, then committed (a synchronous run, no \
                Swift task); task-sleep:MS is a Swift task that sleeps MS on the loop's clock; \
                upstream:HOST:PORT is a Swift task sending one PING to another server \
                (cancellation closes that connection).
                """,
            valueName: "work"
        )
    )
    var work = ServerWork.sleep(milliseconds: 10)

    @Option(
        parsing: .unconditional, help: "Connections served at once.")
    var maxClients = 10_000

    @Option(
        help: ArgumentHelp(
            """
            Longest argument (bulk string) a request may have, as Redis's proto-max-bulk-len; sizes take \
            Redis's units (512mb). Default: 512mb, or --client-query-buffer-limit if that is lower.
            """,
            valueName: "bytes"))
    var protoMaxBulkLen: ByteCount?

    @Option(
        help: ArgumentHelp(
            """
            Most bytes of requests a client may have received and not yet executed, so the \
            largest request with its framing, as Redis's client-query-buffer-limit; a client past it is \
            answered an error and disconnected.
            """,
            valueName: "bytes"))
    var clientQueryBufferLimit = ByteCount(RESPLimits.defaultMaxQueryBufferBytes)

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Deprecated: --client-query-buffer-limit, which is what it always counted (the whole request).",
            valueName: "bytes"))
    var maxRequestBytes: Int?

    @Option(
        help: ArgumentHelp(
            """
            Limits on the replies queued for a client that does not read them, as Redis's \
            client-output-buffer-limit for normal clients: 'HARD SOFT SECONDS'. Past HARD bytes the \
            client is disconnected at once; above SOFT bytes for SECONDS on end, too; 0 turns a \
            limit off. Each disconnect is logged with the client's address.
            """,
            valueName: "hard soft seconds"))
    var clientOutputBufferLimit = OutputBufferLimit.standard

    @Option(
        parsing: .unconditional, help: "Most arguments one request may have, its command name included (Redis's limit)."
    )
    var maxArguments = RESPLimits.defaultMaxArguments

    @Option(
        parsing: .unconditional,
        help: """
            Most bytes one client's MULTI queue may hold (its commands' bytes plus 4 per argument \
            and per command); a command past it is refused and EXEC aborts.
            """)
    var maxTransactionBytes = ServerConfiguration.defaultMaxTransactionBytes

    @Option(
        name: .customLong("drain-timeout-ms"),
        parsing: .unconditional,
        help: "On SIGTERM/SIGINT, how long to wait for clients to take the replies they are owed.")
    var drainTimeoutMilliseconds = 5_000

    @Option(
        name: .customLong("upstream-connect-timeout-ms"), parsing: .unconditional,
        help: "--work upstream: time-out for connecting.")
    var upstreamConnectTimeoutMilliseconds = 1_000

    @Option(
        name: .customLong("upstream-reply-timeout-ms"), parsing: .unconditional,
        help: "--work upstream: time-out for the reply.")
    var upstreamReplyTimeoutMilliseconds = 5_000

    @Option(
        parsing: .unconditional, help: "--work upstream: most upstream connections open at once, over all loops.")
    var upstreamMaxConnections = 256

    @Option(
        help: ArgumentHelp(
            "A static Redis Cluster configuration: one node per line, ID HOST:PORT SLOTS...",
            discussion: """
                Each of SLOTS is a slot or a range FIRST-LAST in 0...16383; '#' starts a comment. \
                Every node is started with the same file. The node answers CLUSTER SLOTS, SHARDS, \
                NODES, MYID, INFO and KEYSLOT, serves only its own slots, and answers -MOVED with \
                the owner's address for the others (-CLUSTERDOWN for slots no node serves).
                """,
            valueName: "file"))
    var clusterConfig: String?

    @Option(help: ArgumentHelp("This node's ID in --cluster-config, or on --etcd.", valueName: "id"))
    var clusterNode: String?

    @Option(
        help: ArgumentHelp(
            "Cluster mode with the slot map in etcd: comma-separated etcd endpoints, http://HOST:PORT.",
            discussion: """
                The node registers under a lease, claims its share of the slots by \
                compare-and-swap, follows the map with a watch (CLUSTER SLOTS, SHARDS, NODES and \
                -MOVED say what etcd says), and serves a slot only while its lease is certainly \
                alive. A dead node's slots are claimed by the others when its lease expires; \
                SIGTERM hands them over first. Needs --cluster-node; not with --cluster-config. \
                Clients are sent to --host, which must be an address they can reach.
                """,
            valueName: "endpoints"))
    var etcd: String?

    @Option(
        name: .customLong("etcd-lease-seconds"), parsing: .unconditional,
        help: "With --etcd: the lease's time to live; a node silent this long loses its slots (1...60).")
    var etcdLeaseSeconds = EtcdSettings.defaultLeaseSeconds

    @Option(
        help: ArgumentHelp(
            "With --etcd: the cluster's name; its keys live under /taskid/NAME/.", valueName: "name"))
    var etcdCluster = "taskid"

    @Option(
        help: ArgumentHelp(
            "Export a span per run over OTLP/HTTP to the collector at URL (e.g. http://127.0.0.1:4318; spans go to URL/v1/traces).",
            discussion: """
                Without it, the standard OTEL_EXPORTER_OTLP_ENDPOINT or \
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT turns the export on (and OTEL_TRACES_EXPORTER=none \
                off); swift-otel reads the other OTEL_* variables. A URL or a protocol that cannot be \
                used is refused at start; spans that could not be exported make the exit status 1.
                """,
            valueName: "URL"))
    var otlpEndpoint: String?

    @Option(
        help: ArgumentHelp(
            """
            The most memory the server may use (INFO's used_memory, what malloc has handed out): past \
            it, SETs and TASK.TRACE START are refused with -OOM while reads and DEL go on (Redis's \
            noeviction); sizes take Redis's units (200mb). 0: no bound.
            """,
            valueName: "bytes"))
    var maxmemory = ByteCount(0)

    @Option(
        help: ArgumentHelp(
            """
            The default user's password: clients must AUTH with it (redis-cli -a, redis-py password=). \
            Other processes can read it in the process list: prefer --requirepass-file.
            """,
            valueName: "password"))
    var requirepass: String?

    @Option(
        help: ArgumentHelp(
            "A file whose first line is the default user's password, as --requirepass but out of the process list.",
            valueName: "file"))
    var requirepassFile: String?

    @Option(
        help: ArgumentHelp(
            """
            Users and the commands they may run, in Redis's ACL file format, a user a line: \
            'user NAME on >PASSWORD +@read +@write ~*' (categories: @read, @write, @keyspace, @admin, \
            @dangerous, @connection, @transaction, @fast, @slow, @all; see docs/SERVER.md).
            """,
            valueName: "file"))
    var aclFile: String?

    @Option(
        help: ArgumentHelp(
            """
            yes: while the default user needs no password, only clients on this host's loopback are \
            served, and others are told why (as Redis's protected mode).
            """,
            valueName: "yes|no"))
    var protectedMode = YesNo.yes

    @OptionGroup(title: "Run control") var runControl: RunControlOptions

    @OptionGroup(title: "TLS") var tls: TLSOptions

    @OptionGroup(title: "Start on etcd") var etcdStart: EtcdStartOptions

    @Option(help: "Least severe log message written to standard error.")
    var logLevel = LogLevelArgument.info

    /// Refuses values out of range, with the option's name and its range, and a `--trace` file
    /// that could not be written at shutdown (see `TraceFileTarget`). Integer options take the
    /// next word whatever it is, so that `--loops -1` is refused as out of range rather than
    /// read as a missing value.
    func validate() throws {
        if let port { try checkOption("--port", port, in: 0...65_535) }
        _ = try clusterConfiguration()
        _ = try etcdSettings()
        try etcdStart.check(etcdGiven: etcd != nil)
        _ = try accessControl()
        if try tls.settings(plainPort: plainPort, portGiven: port != nil, checkingFiles: true)?.only == true
            && (clusterConfig != nil || etcd != nil)
        {
            throw ValidationError("--tls-only cannot serve a cluster: its redirections name the nodes' plain ports")
        }
        try checkOption("--loops", loops, in: 1...64)
        try checkOption("--debounce-ms", debounceMilliseconds, in: 0...86_400_000)
        var ranges = ServerConfiguration()
        try runControl.apply(to: &ranges, maxRunning: maxRunning)
        try checkOption("--timeout-ms", timeoutMilliseconds, in: 0...86_400_000)
        try checkOption("--max-running", maxRunning, in: 0...1_000_000)
        try checkOption("--max-clients", maxClients, in: 1...1_000_000)
        if let maxRequestBytes {
            try checkOption("--max-request-bytes", maxRequestBytes, in: 64...(1 << 30))
            guard clientQueryBufferLimit.bytes == RESPLimits.defaultMaxQueryBufferBytes else {
                throw ValidationError(
                    "--max-request-bytes is the deprecated name of --client-query-buffer-limit: give one of them")
            }
        }
        try checkOption("--client-query-buffer-limit", queryBufferLimit, in: 64...(1 << 40))
        if let protoMaxBulkLen {
            try checkOption("--proto-max-bulk-len", protoMaxBulkLen.bytes, in: 1...(1 << 40))
            guard protoMaxBulkLen.bytes <= queryBufferLimit else {
                throw ValidationError(
                    "--proto-max-bulk-len (\(protoMaxBulkLen)) is larger than --client-query-buffer-limit "
                        + "(\(ByteCount(queryBufferLimit))): no request could carry such an argument")
            }
        }
        try checkOption("--max-arguments", maxArguments, in: 1...Int(Int32.max))
        try checkOption("--max-transaction-bytes", maxTransactionBytes, in: 64...TransactionQueue.largestCapacity)
        try checkOption("--drain-timeout-ms", drainTimeoutMilliseconds, in: 0...3_600_000)
        try checkOption("--upstream-connect-timeout-ms", upstreamConnectTimeoutMilliseconds, in: 1...3_600_000)
        try checkOption("--upstream-reply-timeout-ms", upstreamReplyTimeoutMilliseconds, in: 1...3_600_000)
        try checkOption("--upstream-max-connections", upstreamMaxConnections, in: 1...1_000_000)
        if let traceCapacity {
            guard trace != nil else {
                throw ValidationError(
                    "--trace-capacity needs --trace (TASK.TRACE START takes a capacity of its own)")
            }
            try checkOption("--trace-capacity", traceCapacity, in: RegistryServer.traceCapacities)
        }
        if let trace {
            do { try TraceFileTarget.check(trace) } catch { throw ValidationError("\(error)") }
        }
        // The option alone: the environment's OTEL_* settings are checked when the server
        // starts (`run`), so that parsing a command line never depends on them.
        _ = try spanEndpoint(environment: [:])
    }

    /// The server's settings from the options, the cluster file read again: a file that became
    /// unreadable or wrong since `validate` is an error, never a standalone server. Any thread.
    /// - Throws: `ValidationError`, as `clusterConfiguration()`.
    var serverConfiguration: ServerConfiguration {
        get throws {
            var configuration = ServerConfiguration()
            let cluster = try clusterConfiguration()
            configuration.cluster = cluster
            configuration.host = host
            configuration.port = plainPort
            if var etcd = try etcdSettings(), let clusterNode {
                etcd.waitForID = etcdStart.waitForID
                etcd.connectTimeoutSeconds = etcdStart.connectTimeoutSeconds
                configuration.etcd = etcd
                // Until etcd answers: a cluster of this node alone, serving nothing.
                configuration.cluster = ClusterConfiguration(
                    members: [], blockOwners: Array(repeating: nil, count: SlotBlocks.count),
                    myself: ClusterNode(id: clusterNode, host: host, port: configuration.port, slotRanges: []),
                    servingUntil: 0)
            }
            configuration.loops = loops
            configuration.debounceMilliseconds = debounceMilliseconds
            try runControl.apply(to: &configuration, maxRunning: maxRunning)
            configuration.timeoutMilliseconds = timeoutMilliseconds
            configuration.maxRunning = maxRunning
            configuration.work = work
            configuration.maxClients = maxClients
            configuration.tls = try tls.settings(plainPort: plainPort, portGiven: port != nil, checkingFiles: false)
            configuration.requestLimits = RESPLimits(
                maxBulkBytes: protoMaxBulkLen?.bytes ?? min(RESPLimits.defaultMaxBulkBytes, queryBufferLimit),
                maxQueryBufferBytes: queryBufferLimit, maxArguments: maxArguments)
            configuration.outputBufferLimit = clientOutputBufferLimit
            configuration.maxTransactionBytes = maxTransactionBytes
            configuration.drainTimeoutMilliseconds = drainTimeoutMilliseconds
            configuration.upstreamConnectTimeoutMilliseconds = upstreamConnectTimeoutMilliseconds
            configuration.upstreamReplyTimeoutMilliseconds = upstreamReplyTimeoutMilliseconds
            configuration.upstreamMaxConnections = upstreamMaxConnections
            configuration.access = try accessControl()
            configuration.maxMemoryBytes = maxmemory.bytes
            configuration.protectedMode = protectedMode == .yes
            configuration.tracePath = trace
            configuration.traceCapacity = traceCapacity ?? RegistryTrace.defaultCapacity
            return configuration
        }
    }

    /// Serves until SIGTERM or SIGINT. - Throws: `ExitCode.failure` when the server cannot start
    /// (the reason is logged).
    func run() async throws {
        let level = logLevel.level
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "taskid")
        if maxRequestBytes != nil {
            logger.warning("--max-request-bytes is deprecated: use --client-query-buffer-limit (the same limit)")
        }
        var services: [any Service] = []
        #if OTLP
            // Before the server's registry is made: it takes the tracer bootstrapped then. First
            // in the group, so that it stops last and sends the spans of the server's shutdown.
            let environment = ProcessInfo.processInfo.environment
            var export: SpanExport?
            let configured: OTLPEndpoint?
            do { configured = try spanEndpoint(environment: environment) } catch {
                logger.error("\(error)")
                throw ExitCode.validationFailure
            }
            if let endpoint = configured {
                do {
                    export = try SpanExport.bootstrap(endpoint, environment: environment, level: level)
                } catch {
                    logger.error("cannot export spans to \(endpoint): \(error)")
                    throw ExitCode.validationFailure
                }
                services.append(export!.service)
                logger.info("exporting a span per run", metadata: ["endpoint": "\(endpoint)"])
            }
        #endif
        services.append(ServerService(configuration: try serverConfiguration, logger: logger))
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        do {
            try await group.run()
        } catch let failure as EtcdStartFailure {
            throw ExitCode(failure.exitCode)  // ServerService logged why
        } catch {
            throw ExitCode.failure  // ServerService logged why
        }
        #if OTLP
            if let export, export.problems.drops > 0 {
                logger.warning(
                    "some spans were dropped for a full export queue (\(export.problems.drops) reports above)")
            }
            if let export, export.problems.failures > 0 {
                logger.error("stopped, but some spans were not exported (\(export.problems.failures) failures above)")
                throw ExitCode.failure
            }
        #endif
    }
}
