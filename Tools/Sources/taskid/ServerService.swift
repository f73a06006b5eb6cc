import Logging
import ServiceLifecycle
import TaskidCluster
import TaskidServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `taskid serve` as a `Service`: starts the server, prints the ready line, waits for the
/// group's graceful shutdown (SIGTERM or SIGINT), then stops the server and returns.
///
/// Run it inside a `ServiceGroup` (that is where its graceful shutdown comes from); `run` is
/// called once, from the group's task.
struct ServerService: Service {
    /// The open-files limit leaves no descriptor for a client (logged).
    struct DescriptorBudgetError: Error {}

    let configuration: ServerConfiguration
    let logger: Logger

    /// Serves until the group shuts down gracefully or cancels this task.
    ///
    /// The group installs its signal handlers before it calls `run`, so the port opens only once
    /// a SIGTERM would shut down gracefully rather than kill the process.
    /// - Throws: `LoopError` when the loops cannot start or the port cannot be bound (logged;
    ///   the server is shut down first); the `DrainReport` of a stop whose drain timed out with
    ///   replies undelivered, or whose `--trace` file could not be written (logged), so that
    ///   `taskid serve` exits 1.
    func run() async throws {
        var configuration = self.configuration
        let fitted = DescriptorBudget.apply(to: configuration)
        if let warning = fitted.warning { logger.warning("\(warning)") }
        guard fitted.maxClients > 0 else {
            logger.error(
                "cannot start: the open-files limit leaves no descriptor for a client; raise it with ulimit -n")
            throw DescriptorBudgetError()
        }
        configuration.maxClients = fitted.maxClients
        if configuration.maxMemoryBytes > 0 && MemoryFigures.now().usedBytes == 0 {
            logger.warning(
                "--maxmemory cannot be enforced here: this C library does not report the memory malloc has handed out (glibc's mallinfo), so no write will be refused"
            )
        }
        let server: RegistryServer
        do {
            server = try RegistryServer(configuration: configuration, logger: logger)
        } catch {
            logger.error("cannot start: \(error)")
            throw error
        }
        let port: Int
        do {
            port = try await server.start()
        } catch {
            var addresses: [String] = []
            if configuration.tls?.only != true { addresses.append("\(configuration.host):\(configuration.port)") }
            if let tls = configuration.tls { addresses.append("\(configuration.host):\(tls.port) (TLS)") }
            logger.error("cannot listen on \(addresses.joined(separator: " and ")): \(error)")
            await server.stop()
            throw error
        }
        let tlsPort = configuration.tls == nil ? nil : server.tlsPort
        if let tlsPort, let settings = configuration.tls {
            logger.info(
                "serving RESP over TLS on \(configuration.host):\(tlsPort)",
                metadata: [
                    "client_certificates": "\(settings.clientAuthentication)",
                    "plain_port": "\(settings.only ? "none" : "\(port)")",
                ])
        }
        logger.info(
            "serving RESP on \(configuration.host):\(port)\(configuration.tls?.only == true ? " (TLS only)" : "")",
            metadata: [
                "loops": "\(configuration.loops)", "work": "\(configuration.work)",
                "debounce_ms": "\(configuration.debounceMilliseconds)",
                "timeout_ms": "\(configuration.timeoutMilliseconds)", "max_running": "\(configuration.maxRunning)",
            ])
        if configuration.access.isOpenToAnyone && !["127.0.0.1", "::1", "localhost"].contains(configuration.host) {
            if configuration.protectedMode {
                logger.warning(
                    "protected mode: no password is set, so only clients on this host's loopback are served; set one (--requirepass-file, --acl-file) to serve other hosts"
                )
            } else {
                logger.warning(
                    "no password is set and protected mode is off: anyone who can reach \(configuration.host):\(port) can run every command"
                )
            }
        }
        if let cluster = configuration.cluster, configuration.etcd == nil, !cluster.coversEverySlot {
            let unserved = cluster.unservedSlots
            let count = unserved.reduce(0) { $0 + $1.count }
            let shown = unserved.prefix(4).map {
                $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)"
            }
            logger.warning(
                "\(count) slots are served by no node in the cluster file (\(shown.joined(separator: ", "))\(unserved.count > 4 ? ", …" : "")): their keys get -CLUSTERDOWN, and CLUSTER INFO says cluster_state:fail"
            )
        }
        var stoppedBeforeServing = false
        #if Etcd
            let ownership = configuration.etcd.map { startOwnership($0, server: server, port: port) }
            if let ownership, let etcd = configuration.etcd {
                // The ready line says the node serves: on etcd, once it serves its share.
                do {
                    try await cancelWhenGracefulShutdown {
                        try await self.waitUntilServing(ownership.coordinator, settings: etcd)
                    }
                } catch let failure as EtcdStartFailure {
                    logger.error("cannot start: \(failure)")
                    ownership.task.cancel()
                    await ownership.task.value
                    try? await ownership.http.shutdown()
                    await server.stop()
                    throw failure
                } catch {
                    // Stopped (SIGTERM) before serving: no ready line; the stop below.
                    stoppedBeforeServing = true
                }
            }
        #endif
        if !stoppedBeforeServing {
            ReadyLine(host: configuration.host, port: port, tlsPort: tlsPort, loops: configuration.loops, pid: getpid())
                .emit()
        }
        // Returns on graceful shutdown; throws CancellationError when the group cancels us.
        // Either way the server stops the same way.
        try? await gracefulShutdown()
        #if Etcd
            if let ownership {
                // Its slots go to the others before the drain, so that its clients are sent there.
                await ownership.coordinator.handOver()
                ownership.task.cancel()
                await ownership.task.value
                try? await ownership.http.shutdown()
            }
        #endif
        logger.info(
            "shutting down: delivering the replies owed, for \(configuration.drainTimeoutMilliseconds) ms at most")
        let report = await server.stop()
        guard report.isComplete else {
            logger.error(
                "stopped; the drain timed out: \(report.droppedBytes) bytes of replies to \(report.droppedClients) of \(report.clients) clients were dropped"
            )
            throw report
        }
        if report.traceFailure != nil {
            logger.error("stopped; every reply delivered, but the --trace file was not written")
            throw report
        }
        logger.info("stopped; every reply delivered (\(report.clients) clients)")
    }
}

#if Etcd
    import AsyncHTTPClient
    import NIOCore

    extension ServerService {
        /// Slot ownership on etcd, running: its coordinator, its task and its HTTP client.
        struct RunningOwnership {
            let coordinator: EtcdOwnership
            let task: Task<Void, Never>
            let http: HTTPClient
        }

        /// Returns once the node serves its share of the slot blocks; says what it waits for
        /// meanwhile (when that changes, and every 10 s).
        /// - Throws: `EtcdStartFailure` when another live node holds this node's id, or etcd has
        ///   not confirmed the lease within `--etcd-connect-timeout`; `CancellationError`.
        func waitUntilServing(_ coordinator: EtcdOwnership, settings: EtcdSettings) async throws {
            let started = MonotonicClock.nanoseconds()
            let timeout = UInt64(settings.connectTimeoutSeconds) * 1_000_000_000
            var said: (reason: String, at: UInt64)?
            while true {
                let now = MonotonicClock.nanoseconds()
                switch await coordinator.readiness() {
                case .ready:
                    return
                case .idTaken(let holder):
                    throw EtcdStartFailure.idTaken(id: coordinator.myself.id, holder: holder)
                case .waiting(let reason):
                    if timeout > 0, now &- started >= timeout, await !coordinator.hasRegistered() {
                        throw EtcdStartFailure.noLease(seconds: settings.connectTimeoutSeconds, reason: reason)
                    }
                    if said?.reason != reason || now &- (said?.at ?? 0) >= 10_000_000_000 {
                        logger.info("not serving yet: \(reason)")
                        said = (reason, now)
                    }
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }

        /// Starts following and claiming slots on etcd for `server`, listening on `port`.
        func startOwnership(_ settings: EtcdSettings, server: RegistryServer, port: Int) -> RunningOwnership {
            var httpConfiguration = HTTPClient.Configuration()
            // A refused connection fails the call at once: the ownership retries on its own
            // schedule, and the next endpoint is tried without waiting out the call's time-out.
            httpConfiguration.connectionPool.retryConnectionEstablishment = false
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
            let myself = server.configuration.cluster!.myself
            let coordinator = EtcdOwnership(
                settings: settings, myself: ClusterNode(id: myself.id, host: myself.host, port: port, slotRanges: []),
                store: EtcdClient(endpoints: settings.endpoints, http: http, timeout: .seconds(2)),
                logger: logger,
                publish: { await server.updateCluster($0, number: $1) },
                dropKeys: { await server.dropKeys(inBlocks: $0) })
            logger.info(
                "cluster on etcd",
                metadata: [
                    "endpoints": "\(settings.endpoints.joined(separator: ","))", "lease_s": "\(settings.leaseSeconds)",
                    "prefix": "\(settings.prefix)",
                ])
            return RunningOwnership(coordinator: coordinator, task: Task { await coordinator.run() }, http: http)
        }
    }
#endif

/// A stop whose drain timed out, or whose trace file was not written, is an error of the
/// service: `taskid serve` then exits 1.
extension DrainReport: Error {}

/// Why a node on etcd did not start serving, with the exit status it gives `taskid serve`. A
/// value type; any thread.
enum EtcdStartFailure: Error, Equatable, CustomStringConvertible {
    /// Another live node is registered under this node's id: exit 64 (the command line names a
    /// node that exists).
    case idTaken(id: String, holder: String)
    /// etcd did not confirm the node's lease within `--etcd-connect-timeout`: exit 69 (a
    /// service the node needs is unavailable).
    case noLease(seconds: Int, reason: String)

    var exitCode: Int32 {
        switch self {
        case .idTaken: 64
        case .noLease: 69
        }
    }

    var description: String {
        switch self {
        case .idTaken(let id, let holder):
            "node id '\(id)' is already registered on etcd by \(holder), under a live lease: give this node "
                + "another --cluster-node, or stop that one (--wait-for-id waits for it to go)"
        case .noLease(let seconds, let reason):
            "the node did not register on etcd within --etcd-connect-timeout \(seconds) s: \(reason)"
        }
    }
}
