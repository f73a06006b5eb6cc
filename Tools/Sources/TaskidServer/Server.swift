import Logging
import Synchronization
import TaskIdentity
import TaskidCluster
import TaskidRESP
import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The RESP2 server in front of a sharded task registry: `SET key id` declares the key's task
/// with that identity, `GET key` returns the last committed result, and so on (see docs/SERVER.md).
///
/// Connections live on the first loop; keys are placed over the loops by the sharded registry.
/// Threading: `start`, `stop`, `port`, `registry` and `works` may be used from any thread or task;
/// everything else runs on the loops (the front loop's state is checked by `LoopBound`).
package final class RegistryServer: Sendable {
    package let configuration: ServerConfiguration
    package let group: UVLoopGroup
    /// One registry shard per loop; a key's shard is `registry.shardIndex(for: key)`.
    package let registry: ShardedTaskRegistry<ServerKey>
    /// What a SET runs on each shard, in the order of `registry.shards`.
    package let works: [TaskTemplate<ServerKey>]
    /// Each loop's copy of the claim revisions its runs' fencing tokens are made of.
    let runClaimRevisions: [RunClaimRevisions]
    /// The time-outs and connection cap of `--work upstream:` runs, shared by the shards. Any
    /// thread.
    package let upstreamLimits: UpstreamLimits
    /// The cap on runs at once (`--max-running`), which each shard applies to its own runs;
    /// nil for none. Any thread.
    package let runLimit: ConcurrencyLimit?
    /// Where the server reports what it survives and its start and stop.
    package let logger: Logger
    package var frontLoop: UVLoop { group.loops[0] }

    /// Listener, clients and the accept loop: touched per connection, never per request, so
    /// the thread check of `LoopBound` costs nothing that matters.
    package let front: LoopBound<FrontLoopState>
    /// `used_memory`, and the `--maxmemory` bound on writes. Front loop only.
    package let memory: LoopBound<MemoryGauge>
    /// The bound port, 0 before `start`; read by tests and INFO from other threads. With
    /// `--tls-only`, the TLS port.
    package let boundPort = Atomic<Int>(0)
    /// The bound TLS port (`--tls-port`), 0 before `start` or without TLS. Any thread.
    package let boundTLSPort = Atomic<Int>(0)
    /// Keeps other clients' commands out of a running `EXEC` when commands can suspend (reads
    /// on another loop's shard); nil with one loop, where nothing a command does suspends.
    /// Any thread may read it; it is used on the front loop only.
    package let gate: TransactionGate?
    /// The cluster this node belongs to, as it serves it now: the static one of
    /// `configuration.cluster`, or on etcd the slot map `EtcdOwnership` publishes
    /// (`updateCluster`); nil for a standalone server. Front loop only.
    private let clusterState: LoopBound<ClusterConfiguration?>

    /// The cluster as served now (see `clusterState`). Front loop only.
    package var cluster: ClusterConfiguration? { clusterState.value }

    /// Creates the loops and the shards; listens only at `start`.
    ///
    /// Any thread. - Throws: `LoopError` when a loop cannot start, or a template is refused.
    package init(configuration: ServerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        // Before the loops start: a certificate that cannot be used leaves nothing running.
        let tls = try configuration.tls.map { (settings) throws(TLSSetupError) in try TLSContext.server(settings) }
        group = try UVLoopGroup(loops: configuration.loops, namePrefix: "taskid")
        let upstreamLimits = UpstreamLimits(
            connectTimeoutMilliseconds: configuration.upstreamConnectTimeoutMilliseconds,
            replyTimeoutMilliseconds: configuration.upstreamReplyTimeoutMilliseconds,
            maxConnections: configuration.upstreamMaxConnections)
        self.upstreamLimits = upstreamLimits
        registry = ShardedTaskRegistry<ServerKey>(group: group)
        let runLimit =
            configuration.maxRunning > 0
            ? try ConcurrencyLimit(
                maxRunning: configuration.maxRunning, maxQueued: configuration.maxQueued,
                shed: configuration.shedsNewest ? .newest : .oldest) : nil
        self.runLimit = runLimit
        let runClaimRevisions = group.loops.map { RunClaimRevisions((0, []), loop: $0) }
        self.runClaimRevisions = runClaimRevisions
        works = try zip(group.loops, runClaimRevisions).map {
            try WorkTemplate.make(
                on: $0, configuration: configuration, upstreamLimits: upstreamLimits, limit: runLimit,
                claimRevisions: $1)
        }
        front = LoopBound(FrontLoopState(tls: tls), loop: group.loops[0])
        memory = LoopBound(MemoryGauge(maxBytes: configuration.maxMemoryBytes), loop: group.loops[0])
        gate = configuration.loops > 1 ? TransactionGate(loop: group.loops[0]) : nil
        clusterState = LoopBound(configuration.cluster, loop: group.loops[0])
    }

    /// Serves `cluster` from now on (etcd's slot map changed, or this node's fence moved),
    /// unless a view numbered later than `number` is served already: views handed over
    /// concurrently may land in either order, and an older one must never come back (it may
    /// still serve a block given back since). Any task: hops to the front loop.
    package func updateCluster(_ cluster: ClusterConfiguration, number: UInt64) async {
        // The runs' loops first: a SET accepted under a new claim starts a run that sees it.
        await shareClaimRevisions(of: cluster, number: number)
        _ = try? await frontLoop.submit {
            guard number > self.front.value.clusterViewNumber else { return }
            self.front.value.clusterViewNumber = number
            self.clusterState.value = cluster
        }
    }

    /// Removes every key this node holds in `blocks`, so that it serves them empty: a block
    /// it gains must not serve what it stored when it last owned it, which may be older than
    /// what its owner since acknowledged. One pass over each shard's keys, when blocks are
    /// gained (rare), instead of an index kept on every SET. Any task; returns once they are
    /// gone, true, or false when they could not be removed (the registry has shut down): the
    /// blocks must not be served then.
    package func dropKeys(inBlocks blocks: [Int]) async -> Bool {
        let gained = Set(blocks)
        do {
            try await registry.removeAll { key in gained.contains(SlotBlocks.block(ofSlot: HashSlot.of(key.bytes))) }
            return true
        } catch {
            logger.error("could not empty the slot blocks gained (\(error)); they are not served")
            return false
        }
    }

    /// The port bound by `start`, 0 before; with `--tls-only`, the TLS port. Any thread.
    package var port: Int { boundPort.load(ordering: .acquiring) }
    /// The TLS port bound by `start`; 0 before, or without `--tls-port`. Any thread.
    package var tlsPort: Int { boundTLSPort.load(ordering: .acquiring) }

    /// Binds and starts accepting; returns the bound port. Any task.
    /// - Throws: `LoopError` (e.g. `EADDRINUSE`).
    package func start() async throws -> Int {
        // A write to a peer that has gone must fail with EPIPE, not kill the process (libuv
        // writes with write(2), which raises SIGPIPE).
        signal(SIGPIPE, SIG_IGN)
        // Before the first client: the trace then holds every declaration.
        if configuration.tracePath != nil { try await registry.startTrace(capacity: configuration.traceCapacity) }
        return try await Task(executorPreference: frontLoop) { () throws -> Int in
            try self.listen()
            self.front.value.memoryTask = Task(executorPreference: self.frontLoop) { await self.watchMemory() }
            return self.port
        }.value
    }

    /// Once a second until `stop`: takes the memory figures, and returns malloc's free memory
    /// to the system when it holds much (after many connections closed, a large value deleted,
    /// keys removed), so that the resident set follows what is in use. Front loop only.
    private func watchMemory() async {
        while !front.value.stopping {
            do { try await frontLoop.clock.sleep(for: .seconds(1)) } catch { return }
            // Off the loop: a trim locks each arena in turn and walks its free chunks.
            if memory.value.read().worthTrimming { await Task.detached { MemoryFigures.trim() }.value }
        }
    }

    /// Graceful shutdown with a drain: stops accepting, stops reading from every client, lets
    /// each one finish the requests it has already received and deliver their replies, then
    /// closes it. A client whose replies are not delivered within `drainTimeout` (it stopped
    /// reading) is closed anyway, and the report says how many bytes it was owed. Then every
    /// task is cancelled and the loops shut down. Any task; once.
    @discardableResult
    package func stop(drainTimeout: Duration? = nil) async -> DrainReport {
        let drainTimeout = drainTimeout ?? .milliseconds(configuration.drainTimeoutMilliseconds)
        let tasks: [Task<Void, Never>] = await Task(executorPreference: frontLoop) {
            self.front.value.stopping = true
            self.front.value.listener?.close()
            self.front.value.acceptTask?.cancel()
            self.front.value.tlsListener?.close()
            self.front.value.tlsAcceptTask?.cancel()
            self.front.value.memoryTask?.cancel()
            for client in self.front.value.clients.values { client.connection.stopReading() }
            return self.front.value.clients.values.map(\.task)
        }.value
        var report = await drain(tasks, within: drainTimeout)
        report.traceFailure = await finishStopping(tasks)
        return report
    }

    /// Waits for the client tasks to deliver what they owe and end, for `drainTimeout` at
    /// most; then closes the clients still there. Any task.
    private func drain(_ tasks: [Task<Void, Never>], within drainTimeout: Duration) async -> DrainReport {
        let clock = frontLoop.clock
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for task in tasks { await task.value }
                return true
            }
            group.addTask {
                // Cancelled as soon as every client is done. Cancelled with the stop itself, or
                // the loop gone: the time-out is over all the same (the clients left are closed).
                try? await clock.sleep(for: drainTimeout)
                return false
            }
            let drained = await group.next() ?? true
            group.cancelAll()
            let droppedEarlier = await Task(executorPreference: frontLoop) { self.front.value.droppedWhileDraining }
                .value
            guard !drained else { return droppedEarlier.adding(clients: tasks.count) }
            // Past the time-out: close who is left (here, before the group waits for its first
            // child, which waits for them); their unsent replies are what was dropped.
            return await Task(executorPreference: frontLoop) { () -> DrainReport in
                var report = self.front.value.droppedWhileDraining.adding(clients: tasks.count)
                for client in self.front.value.clients.values {
                    // A client whose replies are all in the kernel, waiting only for the peer to
                    // close its side, has been given everything it is owed.
                    if !client.repliesHandedOver {
                        report.droppedClients += 1
                        report.droppedBytes += client.connection.queuedWriteBytes
                    }
                    client.task.cancel()
                }
                return report
            }.value
        }
    }

    /// After the drain: every task ended, every registry and loop shut down, the `--trace` file
    /// written. Returns why that file could not be written, if it could not. Any task; once.
    private func finishStopping(_ tasks: [Task<Void, Never>]) async -> String? {
        for task in tasks { await task.value }
        // Refusals under way are cut short (a handshake may have seconds left): none is left on
        // a loop that shuts down.
        let refusals = await Task(executorPreference: frontLoop) { Array(self.front.value.refusals.values) }.value
        for refusal in refusals {
            refusal.cancel()
            await refusal.value
        }
        let acceptTasks = await Task(executorPreference: frontLoop) {
            [self.front.value.acceptTask, self.front.value.tlsAcceptTask].compactMap { $0 }
        }.value
        for acceptTask in acceptTasks { await acceptTask.value }
        if let memoryTask = await Task(executorPreference: frontLoop, operation: { self.front.value.memoryTask }).value
        {
            await memoryTask.value
        }
        if configuration.shutdownGraceMilliseconds > 0 {
            await registry.shutdown(gracePeriod: .milliseconds(configuration.shutdownGraceMilliseconds))
        } else {
            await registry.shutdown()
        }
        // After the shutdown, so that the trace ends with it; the loops still run.
        let traceFailure: String?
        if let path = configuration.tracePath { traceFailure = await writeTrace(to: path) } else { traceFailure = nil }
        await group.shutdown()
        return traceFailure
    }

    /// `--trace FILE`: every shard's trace, merged, to `path`. A failure is logged and returned,
    /// not thrown (the server stops either way, and then exits 1). Nothing recording (a client
    /// ended it with TASK.TRACE STOP) is not a failure. Any task.
    private func writeTrace(to path: String) async -> String? {
        do {
            guard let trace = try await registry.stopTrace() else {
                logger.warning(
                    "trace not written: nothing was recording (TASK.TRACE STOP ended it)", metadata: ["path": "\(path)"]
                )
                return nil
            }
            try trace.write(toFile: path)
            logger.info(
                "trace written",
                metadata: ["path": "\(path)", "events": "\(trace.eventCount)", "dropped": "\(trace.droppedEvents)"])
            return nil
        } catch {
            logger.error("trace not written", metadata: ["path": "\(path)", "error": "\(error)"])
            return "\(error)"
        }
    }

    /// Number of clients connected now. Front loop only.
    package var clientCount: Int { front.value.clients.count }

    /// Requests executed so far, by every client; up to date at the end of each turn. Front
    /// loop only.
    package var commandsProcessed: Int { front.value.commandsProcessed }

    // MARK: - One client

    /// Reads, executes and answers one client's requests until it leaves or the server stops;
    /// then delivers the replies it owes. Front loop only.
    package func serve<Stream: ClientStream>(_ stream: Stream, id: UInt64) async {
        let connection = stream.connection
        var parser = RESPParser(limits: configuration.requestLimits)
        var session = ClientSession(id: id, user: configuration.access.userOfNewConnections)
        var request: [ArraySlice<UInt8>] = []
        var output: [UInt8] = []
        while true {
            // The parser copies the bytes straight from the socket's buffer.
            do { guard try await stream.read({ parser.feed($0) }) != nil else { break } } catch {
                if let failure = error as? TLSSessionError { noteFailedTLSSession(failure, of: connection) }
                return
            }
            await gate?.enter()
            var keepOpen = true
            var executedThisTurn = 0
            while keepOpen {
                do {
                    // Bounded until it logs in (an AUTH earlier in this batch counts).
                    parser.isUnauthenticated = session.user == nil
                    guard try parser.next(into: &request) else { break }
                } catch {
                    RESPReply.error("ERR \(error)", into: &output)
                    keepOpen = false
                    break
                }
                executedThisTurn &+= 1
                // SET, the hot path, without an async call per request.
                if session.mayRunEverything && !session.isQueuing && executeSET(request, into: &output) {
                    if executedThisTurn < Self.requestsPerTurn { continue }
                } else {
                    session.unsentReplyBytes = stream.queuedWriteBytes
                    keepOpen = await execute(request, session: &session, into: &output)
                    guard executedThisTurn >= Self.requestsPerTurn || output.count >= Self.replyBytesPerTurn else {
                        continue
                    }
                }
                // A long burst: send what is ready, then let the loop serve the other clients
                // before going on, so one client's pipeline delays them by one batch at most.
                guard keepOpen, sendReplies(&output, to: stream, session: &session) else { break }
                gate?.leave()
                front.value.commandsProcessed &+= executedThisTurn
                executedThisTurn = 0
                await yieldToOtherClients()
                await gate?.enter()
            }
            gate?.leave()
            front.value.commandsProcessed &+= executedThisTurn  // once per turn, not per request
            // Release the slices before the next feed; a large request's array (32 bytes an
            // argument: 320 MB after EXISTS of 10M keys) is let go, not kept while idle.
            if request.capacity > 1024 { request = [] } else { request.removeAll(keepingCapacity: true) }
            parser.releaseConsumedBuffer()
            if !keepOpen {
                // The last replies (QUIT's +OK, a protocol error) must reach the client before
                // the connection closes: closing cancels writes still queued.
                try? await stream.write(output)
                return
            }
            guard sendReplies(&output, to: stream, session: &session) else {
                noteDroppedWhileDraining(connection)
                return
            }
        }
        // The client ended its side: closed at once, as Redis does. Stopping: deliver what is
        // owed (into the kernel, then FIN and wait for the client to close, so that closing does
        // not reset the connection with replies in flight), then close.
        guard front.value.stopping else { return }
        do { try await stream.flush() } catch {
            noteDroppedWhileDraining(connection)
            return
        }
        front.value.clients[id]?.repliesHandedOver = true
        try? await stream.finishWriting(quietPeriod: .milliseconds(100))
    }

    /// A client closed during the drain with replies unsent (past the output cap): reported.
    private func noteDroppedWhileDraining(_ connection: TCPConnection) {
        guard front.value.stopping else { return }
        front.value.droppedWhileDraining.droppedClients += 1
        front.value.droppedWhileDraining.droppedBytes += connection.queuedWriteBytes
    }

    /// Sends the replies gathered so far; false when the connection must be dropped: the send
    /// failed, or the replies queued for it passed an output limit (logged). Front loop only.
    private func sendReplies<Stream: ClientStream>(
        _ output: inout [UInt8], to stream: Stream, session: inout ClientSession
    ) -> Bool {
        let connection = stream.connection
        if !output.isEmpty {
            // Replies to a pipelined batch leave together, in order. What the socket does not
            // take now is queued as these very bytes: the reply is not copied again (over TLS,
            // its encryption is queued instead).
            do { try stream.send(output) } catch { return false }
            // A large batch's buffer is let go rather than kept for the next (the queued write
            // still holds it until written): an idle client keeps no copy of a 512 MiB reply.
            if output.capacity > Self.keptOutputCapacity {
                output = []
            } else {
                output.removeAll(keepingCapacity: true)
            }
        }
        // A client that stopped reading its replies cannot be told, only dropped.
        let queued = stream.queuedWriteBytes
        guard
            let passed = configuration.outputBufferLimit.exceeded(
                queuedBytes: queued, now: MonotonicClock.nanoseconds(),
                overSoftSince: &session.overSoftOutputLimitSince)
        else { return true }
        let limit = configuration.outputBufferLimit
        let which =
            passed == .hard
            ? "hard limit \(ByteCount(limit.hardBytes))"
            : "soft limit \(ByteCount(limit.softBytes)) for \(limit.softSeconds) s"
        logger.warning(
            "client disconnected: its unread replies passed the output buffer's \(which)",
            metadata: [
                "client": "\(session.id)", "address": "\(connection.peerAddress.map { "\($0)" } ?? "unknown")",
                "queued_bytes": "\(queued)",
            ])
        return false
    }

    /// The largest reply buffer a client keeps between batches (a batch of small replies
    /// reuses it); a larger one is freed once sent. Any thread.
    static let keptOutputCapacity = 1 << 20

    /// Requests one client may run before the others get a turn: enough that a pipelined SET
    /// burst (redis-benchmark -P 16 and far beyond) never pauses. Any thread.
    static let requestsPerTurn = 1024
    /// Reply bytes one client may gather before the others get a turn (a burst of INFO). Any
    /// thread.
    static let replyBytesPerTurn = 64 * 1024

    /// Suspends until the loop has polled for I/O once: a zero-length sleep fires in the next
    /// turn's timer phase, after the poll that reads the other clients' requests. (A plain
    /// `Task.yield()` would run again before that poll: the loop runs its queued jobs first.)
    /// Front loop only.
    package func yieldToOtherClients() async {
        try? await frontLoop.clock.sleep(for: .zero)
    }
}
