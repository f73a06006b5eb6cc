import Logging
import Synchronization
import TaskIdentity
import UVLoop

/// The RESP2 server in front of a sharded task registry: `SET key id` declares the key's task
/// with that identity, `GET key` returns the last committed result, and so on (see README).
///
/// Connections live on the first loop; keys are hashed over the shards (one per loop).
/// Threading: `start`, `stop`, `port` and `shard(for:)` may be called from any thread or task;
/// everything else runs on the loops (the front loop's state is checked by `LoopBound`).
final class RegistryServer: Sendable {
    let configuration: ServerConfiguration
    let group: UVLoopGroup
    let shards: [ServerShard]
    /// Where the server reports what it survives and its start and stop.
    let logger: Logger
    var frontLoop: UVLoop { group.loops[0] }

    /// Listener, clients and the accept loop: touched per connection, never per request, so
    /// the thread check of `LoopBound` costs nothing that matters.
    private let front: LoopBound<FrontLoopState>
    /// The bound port, 0 before `start`; read by tests and INFO from other threads.
    private let boundPort = Atomic<Int>(0)

    /// Creates the loops and the shards; listens only at `start`.
    ///
    /// Any thread. - Throws: `LoopError` when a loop cannot start, or a template is refused.
    init(configuration: ServerConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        group = try UVLoopGroup(loops: configuration.loops, namePrefix: "taskid")
        shards = try group.loops.map { try ServerShard(loop: $0, configuration: configuration) }
        front = LoopBound(FrontLoopState(), loop: group.loops[0])
    }

    /// The port bound by `start`, 0 before. Any thread.
    var port: Int { boundPort.load(ordering: .acquiring) }

    /// The shard that owns `key`. Any thread.
    func shard(for key: ServerKey) -> ServerShard {
        // One loop: no hashing (each SET would otherwise hash its key twice).
        if shards.count == 1 { return shards[0] }
        return shards[shardIndex(forHash: key.hashValue, shardCount: shards.count)]
    }

    /// Binds and starts accepting; returns the bound port. Any task.
    /// - Throws: `LoopError` (e.g. `EADDRINUSE`).
    func start() async throws -> Int {
        try await Task(executorPreference: frontLoop) { () throws -> Int in
            let listener = try self.frontLoop.listen(host: self.configuration.host, port: self.configuration.port)
            self.front.value.listener = listener
            self.boundPort.store(listener.localPort, ordering: .releasing)
            self.front.value.acceptTask = Task(executorPreference: self.frontLoop) { await self.acceptLoop(listener) }
            return listener.localPort
        }.value
    }

    /// Accepts until `stop`. Front loop only.
    private func acceptLoop(_ listener: TCPListener) async {
        while !front.value.stopping {
            let connection: TCPConnection
            do {
                connection = try await listener.accept()
            } catch is CancellationError {
                return
            } catch {
                // A failed accept (a peer that reset, EMFILE) must not stop the server. Pause
                // a little so that running out of descriptors does not spin the loop.
                if front.value.stopping || !listener.isOpen { return }
                logger.warning("accept failed: \(error)")
                try? await frontLoop.clock.sleep(for: .milliseconds(10))
                continue
            }
            if front.value.clients.count >= configuration.maxClients {
                var reply: [UInt8] = []
                RESPReply.error("ERR max number of clients reached", into: &reply)
                Task(executorPreference: frontLoop) {
                    try? await connection.write(reply)
                    connection.close()
                }
                continue
            }
            let id = front.value.nextClientID
            front.value.nextClientID += 1
            let task = Task(executorPreference: frontLoop) {
                await self.serve(connection)
                connection.close()
                self.front.value.clients[id] = nil
            }
            front.value.clients[id] = (connection, task)
        }
    }

    /// Graceful shutdown: stop accepting, cancel every client and every task, close every
    /// handle, shut the loops down. Any task; once.
    func stop() async {
        let tasks: [Task<Void, Never>] = await Task(executorPreference: frontLoop) {
            self.front.value.stopping = true
            self.front.value.listener?.close()
            self.front.value.acceptTask?.cancel()
            let tasks = self.front.value.clients.values.map(\.task)
            for task in tasks { task.cancel() }
            return tasks + [self.front.value.acceptTask].compactMap { $0 }
        }.value
        for task in tasks { await task.value }
        for shard in shards { await shard.registry.shutdown() }
        await group.shutdown()
    }

    /// Number of clients connected now. Front loop only.
    var clientCount: Int { front.value.clients.count }

    /// The id the next client will get (CLIENT ID). Front loop only.
    var nextClientID: UInt64 { front.value.nextClientID }

    // MARK: - One client

    /// Reads, executes and answers one client's requests until it leaves. Front loop only.
    private func serve(_ connection: TCPConnection) async {
        var parser = RESPParser(limits: RESPLimits(maxRequestBytes: configuration.maxRequestBytes))
        var request: [ArraySlice<UInt8>] = []
        var output: [UInt8] = []
        while true {
            // The parser copies the bytes straight from the socket's buffer.
            do { guard try await connection.read({ parser.feed($0) }) != nil else { return } } catch { return }
            var keepOpen = true
            while keepOpen {
                do {
                    guard try parser.next(into: &request) else { break }
                } catch {
                    RESPReply.error("ERR \(error)", into: &output)
                    keepOpen = false
                    break
                }
                // SET, the hot path, without an async call per request.
                if executeSET(request, into: &output) { continue }
                keepOpen = await execute(request, into: &output)
            }
            request.removeAll(keepingCapacity: true)  // release the slices before the next feed
            if !keepOpen {
                // The last replies (QUIT's +OK, a protocol error) must reach the client before
                // the connection closes: closing cancels writes still queued.
                try? await connection.write(output)
                return
            }
            if !output.isEmpty {
                // Replies to a pipelined batch leave together, in order.
                do { try connection.send(output) } catch { return }
                output.removeAll(keepingCapacity: true)
            }
            if connection.queuedWriteBytes > configuration.maxOutputBytes {
                return  // the client stopped reading its replies; it cannot be told, only dropped
            }
        }
    }
}

/// `RegistryServer`'s mutable state. Front loop only (kept in a `LoopBound`).
struct FrontLoopState {
    var listener: TCPListener?
    var acceptTask: Task<Void, Never>?
    var clients: [UInt64: (connection: TCPConnection, task: Task<Void, Never>)] = [:]
    var nextClientID: UInt64 = 0
    var stopping = false
}
