import TaskIdentity
import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What a `SET` starts for its key: the work whose result `GET` returns.
enum ServerWork: Sendable, Equatable, CustomStringConvertible {
    /// Hold the run for a while on the loop's timer, then commit: a synchronous run (no Swift
    /// task); cancellation ends it at once and its commit never happens.
    case sleep(milliseconds: Int)
    /// The same work as a Swift task per run that sleeps on the loop's clock (cancellation
    /// wakes it with `CancellationError`): the general path, for comparison.
    case taskSleep(milliseconds: Int)
    /// One request to another server (`PING`, one reply read); cancellation closes that connection.
    case upstream(host: String, port: Int)

    /// Parses `sleep:MS` or `upstream:HOST:PORT`.
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

/// Reports a problem the server survives, on standard error.
func printServerError(_ message: String) {
    var line = "taskid: \(message)\n"
    line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}

/// `taskid serve`'s settings.
struct ServerConfiguration: Sendable {
    var host = "127.0.0.1"
    var port = 6380
    var loops = 1
    var debounceMilliseconds = 0
    var work = ServerWork.sleep(milliseconds: 10)
    var maxClients = 10_000
    var maxRequestBytes = 1 << 20
    /// Replies queued for a client that does not read them, past which it is disconnected.
    var maxOutputBytes = 8 << 20
}

/// What `GET` returns: the id whose run finished last, and that run's generation.
struct ServerResult: Sendable {
    let id: String
    let generation: UInt64
}

/// One registry shard. Loop-confined to the shard's loop. Each key's result is stored in the
/// registry with its task (`commit(result:)`), so a run's end needs no lookup by key.
final class ServerShard: @unchecked Sendable {
    let loop: UVLoop
    let registry: TaskRegistry<ServerKey>
    /// What every SET runs: one template, so a SET allocates no closure.
    private(set) var work: TaskTemplate<ServerKey>!

    init(loop: UVLoop, configuration: ServerConfiguration) throws {
        self.loop = loop
        registry = TaskRegistry<ServerKey>(loop: loop)
        let debounce = Duration.milliseconds(configuration.debounceMilliseconds)
        switch configuration.work {
        case .sleep(let milliseconds):
            work = try .synchronous(debounce: debounce, after: .milliseconds(milliseconds)) {
                [unowned self] key, context in
                self.commit(context)
            }
        case .taskSleep(let milliseconds):
            work = try TaskTemplate<ServerKey>(debounce: debounce) { [unowned self] key, context in
                try await context.clock.sleep(for: .milliseconds(milliseconds))
                self.commit(context)
            }
        case .upstream(let host, let port):
            work = try TaskTemplate<ServerKey>(debounce: debounce) { [unowned self] key, context in
                let connection = try await self.loop.connect(host: host, port: port)
                defer { connection.close() }
                try await connection.write(Array("PING\r\n".utf8))
                _ = try await connection.read()
                self.commit(context)
            }
        }
    }

    /// Stores the run's result for `GET`, if the run is still the key's current one.
    private func commit(_ context: TaskContext) {
        let id = context.id(as: String.self)!
        context.commit(result: ServerResult(id: id, generation: context.generation))
    }

    /// Runs `body` on this shard's loop: at once when already there, else hopping there.
    func onLoop<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        if loop.inLoop { return try body() }
        return try await loop.submit(body)
    }
}

/// The RESP2 server in front of a sharded task registry: `SET key id` declares the key's task
/// with that identity, `GET key` returns the last committed result, and so on (see README).
///
/// Connections live on the first loop; keys are hashed over the shards (one per loop).
/// Threading: `start` and `stop` may be called from any task; everything else runs on loops.
final class RegistryServer: @unchecked Sendable {
    let configuration: ServerConfiguration
    let group: UVLoopGroup
    let shards: [ServerShard]
    var frontLoop: UVLoop { group.loops[0] }

    // Front-loop state.
    private var listener: TCPListener?
    private var acceptTask: Task<Void, Never>?
    private var clients: [UInt64: (connection: TCPConnection, task: Task<Void, Never>)] = [:]
    private var nextClientID: UInt64 = 0
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
        return shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
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

    /// Executes `request` if it is a well-formed `SET key id` and returns true; returns false
    /// for anything else. SET is the hot path (every identity change): no case conversion, two
    /// strings, and synchronous.
    @inline(__always)
    func executeSET(_ request: [ArraySlice<UInt8>], into out: inout [UInt8]) -> Bool {
        guard request.count == 3, Self.isSET(request[0]) else { return false }
        do {
            try declare(key: ServerKey(request[1]), id: String(decoding: request[2], as: UTF8.self))
            out.append(contentsOf: Self.okReply)
        } catch {
            RESPReply.error("ERR \(error)", into: &out)
        }
        return true
    }

    /// Executes one request other than a well-formed SET (see `executeSET`), appending its
    /// reply; returns false when the connection must close.
    func execute(_ request: [ArraySlice<UInt8>], into out: inout [UInt8]) async -> Bool {
        let name = String(decoding: request[0], as: UTF8.self).uppercased()
        let arguments = request.dropFirst().map { String(decoding: $0, as: UTF8.self) }
        func arity(_ valid: Bool) -> Bool {
            if !valid {
                RESPReply.error("ERR wrong number of arguments for '\(name.lowercased())' command", into: &out)
            }
            return valid
        }
        do {
            switch name {
            case "PING":
                guard arity(arguments.count <= 1) else { return true }
                if let message = arguments.first {
                    RESPReply.bulk(Array(message.utf8), into: &out)
                } else {
                    RESPReply.simple("PONG", into: &out)
                }
            case "ECHO":
                guard arity(arguments.count == 1) else { return true }
                RESPReply.bulk(Array(arguments[0].utf8), into: &out)
            case "QUIT":
                RESPReply.simple("OK", into: &out)
                return false
            case "SET":
                guard arity(arguments.count >= 2) else { return true }
                try declare(key: ServerKey(request[1]), id: arguments[1])
                RESPReply.simple("OK", into: &out)
            case "GET":
                guard arity(arguments.count == 1) else { return true }
                let key = ServerKey(request[1])
                let shard = shard(for: key)
                if let result = try await shard.onLoop({ shard.registry.result(of: key, as: ServerResult.self) }) {
                    RESPReply.arrayHeader(2, into: &out)
                    RESPReply.bulk(Array(result.id.utf8), into: &out)
                    RESPReply.bulk(Array(String(result.generation).utf8), into: &out)
                } else {
                    RESPReply.null(into: &out)
                }
            case "DEL":
                guard arity(arguments.count >= 1) else { return true }
                var removed = 0
                for key in request.dropFirst().map(ServerKey.init) {
                    let shard = shard(for: key)
                    let existed = try await shard.onLoop { () throws -> Bool in
                        let existed = shard.registry.contains(key)
                        try shard.registry.remove(key)
                        return existed
                    }
                    if existed { removed += 1 }
                }
                RESPReply.integer(removed, into: &out)
            case "EXISTS":
                guard arity(arguments.count >= 1) else { return true }
                var count = 0
                for key in request.dropFirst().map(ServerKey.init) {
                    let shard = shard(for: key)
                    if try await shard.onLoop({ shard.registry.contains(key) }) { count += 1 }
                }
                RESPReply.integer(count, into: &out)
            case "DBSIZE":
                guard arity(arguments.isEmpty) else { return true }
                var total = 0
                for shard in shards { total += try await shard.onLoop { shard.registry.counters.liveSlots } }
                RESPReply.integer(total, into: &out)
            case "TASK.PHASE":
                guard arity(arguments.count == 1) else { return true }
                let key = ServerKey(request[1])
                let shard = shard(for: key)
                if let phase = try await shard.onLoop({ shard.registry.phase(of: key)?.description }) {
                    RESPReply.simple(phase, into: &out)
                } else {
                    RESPReply.null(into: &out)
                }
            case "INFO":
                RESPReply.bulk(Array(try await info().utf8), into: &out)
            case "COMMAND":
                if arguments.first?.uppercased() == "COUNT" {
                    RESPReply.integer(0, into: &out)
                } else {
                    RESPReply.arrayHeader(0, into: &out)
                }
            case "CONFIG":
                guard arity(arguments.count >= 2), arguments[0].uppercased() == "GET" else {
                    if arguments.count >= 2 { RESPReply.error("ERR only CONFIG GET is supported", into: &out) }
                    return true
                }
                let values = ["save": "", "appendonly": "no", "maxclients": String(configuration.maxClients)]
                let matches = arguments.dropFirst().compactMap { name in values[name.lowercased()].map { (name, $0) } }
                RESPReply.arrayHeader(matches.count * 2, into: &out)
                for (key, value) in matches {
                    RESPReply.bulk(Array(key.utf8), into: &out)
                    RESPReply.bulk(Array(value.utf8), into: &out)
                }
            case "CLIENT":
                guard arity(arguments.count >= 1) else { return true }
                switch arguments[0].uppercased() {
                case "ID": RESPReply.integer(Int(nextClientID), into: &out)
                case "GETNAME": RESPReply.null(into: &out)
                default: RESPReply.simple("OK", into: &out)
                }
            case "SELECT":
                guard arity(arguments.count == 1) else { return true }
                if arguments[0] == "0" {
                    RESPReply.simple("OK", into: &out)
                } else {
                    RESPReply.error("ERR DB index is out of range", into: &out)
                }
            default:
                let start = arguments.prefix(3).map { "'\($0.prefix(64))'" }.joined(separator: " ")
                RESPReply.error(
                    "ERR unknown command '\(name.lowercased().prefix(64))', with args beginning with: \(start)",
                    into: &out)
            }
        } catch {
            RESPReply.error("ERR \(error)", into: &out)
        }
        return true
    }

    private static let okReply: [UInt8] = Array("+OK\r\n".utf8)

    private static func isSET(_ name: ArraySlice<UInt8>) -> Bool {
        guard name.count == 3 else { return false }
        let start = name.startIndex
        return name[start] | 0x20 == UInt8(ascii: "s") && name[start + 1] | 0x20 == UInt8(ascii: "e")
            && name[start + 2] | 0x20 == UInt8(ascii: "t")
    }

    /// `SET key id`: declares the key's task with that identity.
    private func declare(key: ServerKey, id: String) throws {
        let shard = shard(for: key)
        try shard.registry.task(key, id: id, template: shard.work)
    }

    /// The registry's counters in Redis's INFO format.
    func info() async throws -> String {
        var total = RegistryCounters()
        for shard in shards { total = total + (try await shard.onLoop { shard.registry.counters }) }
        let clients = try await frontLoop.submit { self.clients.count }
        let lines = [
            "# Server", "taskid_version:0.1.0", "tcp_port:\(port)", "loops:\(shards.count)",
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
