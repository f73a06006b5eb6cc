import TaskIdentity
import TaskidCluster
import TaskidRESP
import UVLoop

/// The commands a client may send, and their replies. Keys, ids and messages are bytes, used as
/// sent: nothing is decoded but command names and options.
extension RegistryServer {
    /// Executes `request` if it is `SET key id` and returns true; returns false for anything
    /// else. SET is the hot path (every identity change): no case conversion, no decoding, and
    /// synchronous. Front loop only.
    @inline(__always)
    func executeSET(_ request: [ArraySlice<UInt8>], into out: inout [UInt8]) -> Bool {
        guard request.count == 3, Self.isSET(request[0]) else { return false }
        if let cluster, let redirection = Self.redirection(toSlot: HashSlot.of(request[1]), in: cluster) {
            RESPReply.error(redirection, into: &out)
            return true
        }
        if configuration.maxMemoryBytes > 0 && memory.value.refusesWrite(of: request[1].count + request[2].count) {
            RESPReply.error(Self.outOfMemory, into: &out)
            return true
        }
        do {
            try declare(key: ServerKey(request[1]), id: ServerID(taking: request[2]))
            out.append(contentsOf: Self.okReply)
        } catch {
            RESPReply.error("ERR \(error)", into: &out)
        }
        return true
    }

    /// Executes one request other than a plain SET (see `executeSET`), appending its reply;
    /// inside `MULTI`, queues it instead. Returns false when the connection must close.
    /// Front loop only.
    func execute(_ request: [ArraySlice<UInt8>], session: inout ClientSession, into out: inout [UInt8]) async -> Bool {
        let name = Self.commandName(request[0])
        if !session.mayRunEverything, let denial = accessDenial(of: request, name: name, session: session) {
            if session.isQueuing && name == "EXEC" {
                // As Redis: an EXEC the user may not run discards the transaction.
                session.transaction = .none
                RESPReply.error("EXECABORT Transaction discarded because of: " + denial, into: &out)
                return true
            }
            RESPReply.error(denial, into: &out)
            // As Redis: a command refused inside MULTI dooms the transaction.
            if session.isQueuing && name != "DISCARD" {
                session.transaction = .doomed(session.transaction.slots)
            }
            return true
        }
        guard session.isQueuing else { return await run(request, name: name, session: &session, into: &out) }
        switch name {
        case "EXEC":
            return await exec(session: &session, into: &out)
        case "DISCARD":
            session.transaction = .none
            RESPReply.simple("OK", into: &out)
        case "MULTI":
            RESPReply.error("ERR MULTI calls can not be nested", into: &out)
        case "QUIT":
            RESPReply.simple("OK", into: &out)
            return false
        default:
            // As Redis: a command that cannot run (unknown, wrong arity, another node's keys) is
            // refused now, and dooms the transaction. Past the queue's cap, the same: the queue
            // is let go at once.
            var slots = session.transaction.slots
            // As Redis: a write queued past --maxmemory is refused now, and dooms the transaction.
            let outOfMemory =
                name == "SET" && request.count == 3 && configuration.maxMemoryBytes > 0
                    && memory.value.refusesWrite(of: request[1].count + request[2].count)
                ? Self.outOfMemory : nil
            let refusal =
                Self.refusal(of: request, name: name) ?? outOfMemory
                ?? clusterRefusal(of: request, name: name, noting: &slots)
            guard case .queuing(var queue) = session.transaction else {
                // Doomed already: Redis queues what it can all the same (EXEC aborts anyway);
                // this server answers as it does and keeps only the slots.
                if let refusal {
                    RESPReply.error(refusal, into: &out)
                } else {
                    RESPReply.simple("QUEUED", into: &out)
                }
                session.transaction = .doomed(slots)
                return true
            }
            let cost = TransactionQueue.cost(of: request)
            if let refusal {
                RESPReply.error(refusal, into: &out)
                session.transaction = .doomed(slots)
            } else if queue.accountedBytes + cost > configuration.maxTransactionBytes {
                RESPReply.error(
                    "ERR transaction too large: its queued commands would take more than "
                        + "\(configuration.maxTransactionBytes) bytes (--max-transaction-bytes)", into: &out)
                session.transaction = .doomed(slots)
            } else {
                queue.slots = slots
                session.transaction = .none  // the queue is uniquely referenced while it grows
                queue.append(request)
                session.transaction = .queuing(queue)
                RESPReply.simple("QUEUED", into: &out)
            }
        }
        return true
    }

    /// `EXEC`: runs the queued commands back to back and answers an array of their replies.
    /// Front loop only.
    /// No other client's command runs between them: with one loop nothing they do suspends,
    /// so they run in one turn of the loop; with more, `gate` holds the other clients off.
    /// Returns false when the connection must close: the replies passed the output buffer's
    /// hard limit while they were made (EXEC's are dropped, as Redis drops such a client).
    private func exec(session: inout ClientSession, into out: inout [UInt8]) async -> Bool {
        let state = session.transaction
        session.transaction = .none
        // As Redis, where the cluster's check of EXEC (every queued key on one slot) comes first.
        guard !state.slots.spanSeveral else {
            RESPReply.error(Self.crossSlotError, into: &out)
            return true
        }
        guard case .queuing(let queue) = state else {
            RESPReply.error("EXECABORT Transaction discarded because of previous errors.", into: &out)
            return true
        }
        let commands = queue.commands
        if let gate {
            gate.leave()
            await gate.enterExclusive()
        }
        let replyStart = out.count
        RESPReply.arrayHeader(commands.count, into: &out)
        let hardLimit = configuration.outputBufferLimit.hardBytes
        var withinLimit = true
        for command in commands {
            // QUIT is never queued, so every command's reply is kept.
            // Unsliced: no other client's command may run between a transaction's.
            _ = await run(command, name: Self.commandName(command[0]), session: &session, sliced: false, into: &out)
            // The whole reply is made before any of it is sent: past the hard limit, the client
            // is dropped now, before it can make the server build more than the limit allows
            // (MULTI, GET of a 512 MiB value 2,000 times, EXEC).
            if hardLimit > 0 && out.count + session.unsentReplyBytes > hardLimit {
                logger.warning(
                    "client disconnected: its transaction's replies passed the output buffer's hard limit \(ByteCount(hardLimit))",
                    metadata: ["client": "\(session.id)", "reply_bytes": "\(out.count)"])
                out.removeSubrange(replyStart...)  // the replies before EXEC's are still sent
                withinLimit = false
                break
            }
        }
        if let gate {
            gate.leaveExclusive()
            await gate.enter()
        }
        return withinLimit
    }

    /// Runs one command (never inside `MULTI`'s queuing); false when the connection must close.
    /// `sliced`: a command over many keys lets the other clients run every `keysPerSlice` keys
    /// (not inside `EXEC`). Front loop only.
    private func run(
        _ request: [ArraySlice<UInt8>], name: String, session: inout ClientSession, sliced: Bool = true,
        into out: inout [UInt8]
    ) async -> Bool {
        if let refusal = Self.refusal(of: request, name: name) ?? redirection(of: request, name: name) {
            RESPReply.error(refusal, into: &out)
            return true
        }
        let version = session.protocolVersion
        let arguments = request.dropFirst()
        do {
            switch name {
            case "PING":
                if let message = arguments.first {
                    RESPReply.bulk(message, into: &out)
                } else {
                    RESPReply.simple("PONG", into: &out)
                }
            case "ECHO":
                RESPReply.bulk(request[1], into: &out)
            case "QUIT":
                RESPReply.simple("OK", into: &out)
                return false
            case "SET":
                // SET takes no options: the registry has no expiry or conditional declaration.
                guard request.count == 3 else {
                    RESPReply.error("ERR syntax error", into: &out)
                    return true
                }
                if configuration.maxMemoryBytes > 0
                    && memory.value.refusesWrite(of: request[1].count + request[2].count)
                {
                    RESPReply.error(Self.outOfMemory, into: &out)
                    return true
                }
                // Inside EXEC (unsliced) the id is copied: taking it would keep the whole
                // transaction queue's bytes (up to --max-transaction-bytes) alive with the key.
                let id = sliced ? ServerID(taking: request[2]) : ServerID(request[2])
                try declare(key: ServerKey(request[1]), id: id)
                RESPReply.simple("OK", into: &out)
            case "GET":
                let key = ServerKey(request[1])
                if let result = try await registry.onShard(for: key, { try $0.result(of: key, as: ServerResult.self) })
                {
                    RESPReply.arrayHeader(2, into: &out)
                    RESPReply.bulk(result.id.byteSlice, into: &out)
                    RESPReply.bulk(String(result.generation).utf8, into: &out)
                } else {
                    RESPReply.null(version, into: &out)
                }
            case "DEL":
                let removed = try await countKeys(arguments, sliced: sliced) { shard, key in
                    let existed = try shard.contains(key)
                    try shard.remove(key)
                    return existed
                }
                if removed > 0 && configuration.maxMemoryBytes > 0 { memory.value.noteFreed() }
                RESPReply.integer(removed, into: &out)
            case "EXISTS":
                let count = try await countKeys(arguments, sliced: sliced) { shard, key in try shard.contains(key) }
                RESPReply.integer(count, into: &out)
            case "DBSIZE":
                RESPReply.integer(try await registry.countersSnapshot().liveSlots, into: &out)
            case "TASK.PHASE":
                let key = ServerKey(request[1])
                if let phase = try await registry.onShard(for: key, { try $0.phase(of: key)?.description }) {
                    RESPReply.simple(phase, into: &out)
                } else {
                    RESPReply.null(version, into: &out)
                }
            case "TASK.INFO":
                try await taskInfo(of: ServerKey(request[1]), version: version, into: &out)
            case "TASK.QUEUE":
                try await queueCommand(into: &out)
            case "TASK.TRACE":
                try await traceCommand(
                    Array(arguments), version: version, unsentBytes: session.unsentReplyBytes, into: &out)
            case "INFO":
                RESPReply.verbatimText(try await info(), version, into: &out)
            case "COMMAND":
                command(Array(arguments), version: version, into: &out)
            case "CLUSTER":
                cluster(Array(arguments), version: version, into: &out)
            case "READONLY", "READWRITE", "ASKING":
                // Cluster clients send these to reach replicas or follow -ASK; there are no
                // replicas and no slot migrations, so they change nothing.
                if cluster == nil {
                    RESPReply.error("ERR This instance has cluster support disabled", into: &out)
                } else {
                    RESPReply.simple("OK", into: &out)
                }
            case "CONFIG":
                configGet(Array(arguments), version: version, into: &out)
            case "CLIENT":
                client(Array(arguments), session: &session, into: &out)
            case "SELECT":
                switch Int(String(decoding: request[1], as: UTF8.self)) {
                case 0: RESPReply.simple("OK", into: &out)
                case .some where cluster != nil:
                    RESPReply.error("ERR SELECT is not allowed in cluster mode", into: &out)
                case .some: RESPReply.error("ERR DB index is out of range", into: &out)
                case nil: RESPReply.error("ERR value is not an integer or out of range", into: &out)
                }
            case "HELLO":
                hello(Array(arguments), session: &session, into: &out)
            case "AUTH":
                auth(Array(arguments), session: &session, into: &out)
            case "MULTI":
                session.transaction = .queuing(TransactionQueue())
                RESPReply.simple("OK", into: &out)
            case "EXEC":
                RESPReply.error("ERR EXEC without MULTI", into: &out)
            case "DISCARD":
                RESPReply.error("ERR DISCARD without MULTI", into: &out)
            default:
                preconditionFailure("'\(name)' passed refusal(of:) but has no case here")
            }
        } catch {
            RESPReply.error("ERR \(error)", into: &out)
        }
        return true
    }

    /// Keys a command over many keys (`EXISTS`, `DEL`) handles before the other clients get a
    /// turn: about a millisecond of work, so that one command over ten million keys holds
    /// another client's PING no longer than a burst of requests does. Any thread.
    static let keysPerSlice = 4096

    /// Runs `body` for each key of `arguments` on that key's shard and counts the keys it answers
    /// true for. The keys go a slice (`keysPerSlice`) at a time, grouped by shard, so each shard is
    /// visited once a slice: one hop to another loop for thousands of keys, where a hop a key made
    /// EXISTS of 10M keys take 7.7 s. When `sliced`, the other clients run between slices. A
    /// repeated key always falls on one shard, where its keys keep the order they were sent in, so
    /// `DEL k k` still counts 1. Front loop only.
    private func countKeys(
        _ arguments: ArraySlice<ArraySlice<UInt8>>, sliced: Bool,
        _ body: @escaping @Sendable (TaskRegistry<ServerKey>, ServerKey) throws -> Bool
    ) async throws -> Int {
        var count = 0
        var sliceStart = arguments.startIndex
        var keysByShard = [[ServerKey]](repeating: [], count: registry.shards.count)
        while sliceStart < arguments.endIndex {
            if sliced && sliceStart > arguments.startIndex { await letOtherClientsRun() }
            let sliceEnd = min(sliceStart + Self.keysPerSlice, arguments.endIndex)
            for argument in arguments[sliceStart..<sliceEnd] {
                let key = ServerKey(argument)
                keysByShard[registry.shardIndex(for: key)].append(key)
            }
            for shard in keysByShard.indices where !keysByShard[shard].isEmpty {
                let keys = keysByShard[shard]
                keysByShard[shard] = []
                count += try await registry.onShard(for: keys[0]) { registry in
                    var answeredTrue = 0
                    for key in keys where try body(registry, key) { answeredTrue += 1 }
                    return answeredTrue
                }
            }
            sliceStart = sliceEnd
        }
        return count
    }

    /// Lets the other clients run: leaves the transaction gate (held while this client's
    /// requests run), waits for the loop's next poll, and enters it again. Front loop only.
    func letOtherClientsRun() async {
        gate?.leave()
        await yieldToOtherClients()
        await gate?.enter()
    }

    /// Why `request` cannot run (an unknown command, or the wrong number of arguments), as
    /// Redis words it; nil when it can. Any thread.
    static func refusal(of request: [ArraySlice<UInt8>], name: String) -> String? {
        guard let arity = commandArity[name] else {
            // As Redis: the name as sent, then arguments each quoted and followed by a space,
            // while fewer than 128 bytes of them are shown.
            var shown: [UInt8] = []
            for argument in request.dropFirst() where shown.count < 128 {
                shown += [UInt8(ascii: "'")] + argument.prefix(128 - shown.count) + Array("' ".utf8)
            }
            return "ERR unknown command '\(String(decoding: request[0].prefix(128), as: UTF8.self))', "
                + "with args beginning with: \(String(decoding: shown, as: UTF8.self))"
        }
        let count = request.count
        let fits = arity >= 0 ? count == arity : count >= -arity
        // PING takes one message at most (its arity, -1, cannot say so).
        guard fits, name != "PING" || count <= 2 else {
            return "ERR wrong number of arguments for '\(name.lowercased())' command"
        }
        return nil
    }

    /// Each command's argument count, the name included, in Redis's notation: n exactly n,
    /// -n at least n. Any thread.
    package static let commandArity: [String: Int] = [
        "PING": -1, "ECHO": 2, "QUIT": -1, "SET": -3, "GET": 2, "DEL": -2, "EXISTS": -2, "DBSIZE": 1,
        "TASK.PHASE": 2, "TASK.INFO": 2, "TASK.QUEUE": 1, "TASK.TRACE": -2, "INFO": -1, "COMMAND": -1, "CONFIG": -2,
        "CLIENT": -2,
        "SELECT": 2,
        "HELLO": -1, "AUTH": -2,
        "MULTI": 1, "EXEC": 1, "DISCARD": 1, "CLUSTER": -2, "READONLY": 1, "READWRITE": 1, "ASKING": 1,
    ]

    /// A command or option name in upper case (names are ASCII; other bytes never match one).
    /// Any thread.
    static func commandName(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.lazy.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
    }

    /// In cluster mode, why a command cannot join the transaction `queue`: its keys are another
    /// node's or in several slots. Notes its slot in `slots` when it can join (Redis refuses a
    /// transaction over several slots at `EXEC`). Nil outside cluster mode.
    private func clusterRefusal(
        of request: [ArraySlice<UInt8>], name: String, noting slots: inout TransactionSlots
    ) -> String? {
        guard cluster != nil else { return nil }
        if let redirection = redirection(of: request, name: name) { return redirection }
        if case .slot(let slot) = Self.keySlot(of: request, name: name) { slots.note(slot) }
        return nil
    }

    /// `-ERR wrong number of arguments for 'command|subcommand' command`, as Redis words it.
    /// Any thread.
    static func wrongArity(_ command: String, _ subcommand: String, into out: inout [UInt8]) {
        RESPReply.error(
            "ERR wrong number of arguments for '\(command.lowercased())|\(subcommand.lowercased())' command",
            into: &out)
    }

    /// `-ERR unknown subcommand '…'. Try COMMAND HELP.`, as Redis words it (at most 128 bytes of
    /// the subcommand shown). Any thread.
    static func unknownSubcommand(_ subcommand: ArraySlice<UInt8>, of command: String, into out: inout [UInt8]) {
        let shown = String(decoding: subcommand.prefix(128), as: UTF8.self)
        RESPReply.error("ERR unknown subcommand '\(shown)'. Try \(command) HELP.", into: &out)
    }

    private static let okReply: [UInt8] = Array("+OK\r\n".utf8)

    /// Redis's refusal of a write past `maxmemory`. Any thread.
    package static let outOfMemory = "OOM command not allowed when used memory > 'maxmemory'."

    private static func isSET(_ name: ArraySlice<UInt8>) -> Bool {
        guard name.count == 3 else { return false }
        let start = name.startIndex
        return name[start] | 0x20 == UInt8(ascii: "s") && name[start + 1] | 0x20 == UInt8(ascii: "e")
            && name[start + 2] | 0x20 == UInt8(ascii: "t")
    }

    /// `SET key id`: declares the key's task with that identity.
    private func declare(key: ServerKey, id: ServerID) throws {
        let index = registry.shardIndex(for: key)
        try registry.shards[index].task(key, id: id, template: works[index])
    }
}
