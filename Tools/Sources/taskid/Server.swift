import TaskIdentity
import UVLoop

/// The RESP2 server in front of a sharded task registry: `SET key id` declares the key's task
/// with that identity, `GET key` returns the last committed result, and so on (see README).
///
/// Connections live on the first loop; keys are hashed over the shards (one per loop).
/// Threading: `start` and `stop` may be called from any task; everything else runs on loops.
///
/// Unchecked `Sendable`: its mutable state is touched only on the front loop (tasks preferring it).
final class RegistryServer: @unchecked Sendable {
    let configuration: ServerConfiguration
    let group: UVLoopGroup
    let shards: [ServerShard]
    var frontLoop: UVLoop { group.loops[0] }

    // Front-loop state.
    private var listener: TCPListener?
    private var acceptTask: Task<Void, Never>?
    private var clients: [UInt64: (connection: TCPConnection, task: Task<Void, Never>)] = [:]
    private(set) var nextClientID: UInt64 = 0
    private var stopping = false
    private(set) var port = 0

    init(configuration: ServerConfiguration) throws {
        self.configuration = configuration
        group = try UVLoopGroup(loops: configuration.loops, namePrefix: "taskid")
        shards = try group.loops.map { try ServerShard(loop: $0, configuration: configuration) }
    }

    func shard(for key: ServerKey) -> ServerShard {
        // One loop: no hashing (each SET would otherwise hash its key twice).
        if shards.count == 1 { return shards[0] }
        return shards[shardIndex(forHash: key.hashValue, shardCount: shards.count)]
    }

    /// Binds and starts accepting; returns the bound port.
    /// - Throws: `LoopError` (e.g. `EADDRINUSE`).
    func start() async throws -> Int {
        try await Task(executorPreference: frontLoop) { () throws -> Int in
            let listener = try self.frontLoop.listen(host: self.configuration.host, port: self.configuration.port)
            self.listener = listener
            self.port = listener.localPort
            self.acceptTask = Task(executorPreference: self.frontLoop) { await self.acceptLoop(listener) }
            return self.port
        }.value
    }

    private func acceptLoop(_ listener: TCPListener) async {
        while !stopping {
            let connection: TCPConnection
            do {
                connection = try await listener.accept()
            } catch is CancellationError {
                return
            } catch {
                // A failed accept (a peer that reset, EMFILE) must not stop the server. Pause
                // a little so that running out of descriptors does not spin the loop.
                if stopping || !listener.isOpen { return }
                printServerError("accept failed: \(error)")
                try? await frontLoop.clock.sleep(for: .milliseconds(10))
                continue
            }
            if clients.count >= configuration.maxClients {
                var reply: [UInt8] = []
                RESPReply.error("ERR max number of clients reached", into: &reply)
                Task(executorPreference: frontLoop) {
                    try? await connection.write(reply)
                    connection.close()
                }
                continue
            }
            let id = nextClientID
            nextClientID += 1
            let task = Task(executorPreference: frontLoop) {
                await self.serve(connection)
                connection.close()
                self.clients[id] = nil
            }
            clients[id] = (connection, task)
        }
    }

    /// Graceful shutdown: stop accepting, cancel every client and every task, close every
    /// handle, shut the loops down.
    func stop() async {
        let tasks: [Task<Void, Never>] = await Task(executorPreference: frontLoop) {
            self.stopping = true
            self.listener?.close()
            self.acceptTask?.cancel()
            let tasks = self.clients.values.map(\.task)
            for task in tasks { task.cancel() }
            return tasks + [self.acceptTask].compactMap { $0 }
        }.value
        for task in tasks { await task.value }
        for shard in shards { await shard.registry.shutdown() }
        await group.shutdown()
    }

    /// Number of clients connected now. Front loop only.
    var clientCount: Int { clients.count }

    // MARK: - One client

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
