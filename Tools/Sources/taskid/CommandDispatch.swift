import TaskIdentity
import UVLoop

/// The commands a client may send, and their replies.
extension RegistryServer {
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
                if let result = try await shard.onLoop({ try shard.registry.result(of: key, as: ServerResult.self) }) {
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
                        let existed = try shard.registry.contains(key)
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
                    if try await shard.onLoop({ try shard.registry.contains(key) }) { count += 1 }
                }
                RESPReply.integer(count, into: &out)
            case "DBSIZE":
                guard arity(arguments.isEmpty) else { return true }
                var total = 0
                for shard in shards { total += try await shard.onLoop { try shard.registry.counters.liveSlots } }
                RESPReply.integer(total, into: &out)
            case "TASK.PHASE":
                guard arity(arguments.count == 1) else { return true }
                let key = ServerKey(request[1])
                let shard = shard(for: key)
                if let phase = try await shard.onLoop({ try shard.registry.phase(of: key)?.description }) {
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
}
