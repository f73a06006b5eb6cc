import TaskidRESP

/// `COMMAND`: what each command is, in Redis 7's layout, so that clients which route by key
/// (redis-py's `RedisCluster` reads the key positions from it) know this server's commands.
/// Front loop only, unless marked.
extension RegistryServer {
    /// Each command's flags as `COMMAND` lists them; a command not here has none. Any thread.
    static let commandFlags: [String: [String]] = [
        "GET": ["readonly", "fast"], "SET": ["write", "denyoom"], "DEL": ["write"], "EXISTS": ["readonly", "fast"],
        "TASK.PHASE": ["readonly", "fast"], "TASK.INFO": ["readonly", "fast"], "TASK.QUEUE": ["readonly"],
        "DBSIZE": ["readonly", "fast"],
        "PING": ["fast"], "ECHO": ["fast"],
        "MULTI": ["noscript", "loading", "stale", "fast"], "EXEC": ["noscript", "loading", "stale"],
        "DISCARD": ["noscript", "loading", "stale", "fast"], "TASK.TRACE": ["admin", "noscript"],
    ]

    /// `COMMAND [COUNT | LIST | INFO name… | DOCS [name…] | GETKEYS command arg…]`.
    func command(_ arguments: [ArraySlice<UInt8>], version: RESPVersion, into out: inout [UInt8]) {
        let names = Self.commandArity.keys.sorted()
        guard let first = arguments.first else {
            RESPReply.arrayHeader(names.count, into: &out)
            for name in names { Self.commandEntry(name, version: version, into: &out) }
            return
        }
        let subcommand = Self.commandName(first)
        switch (subcommand, arguments.count) {
        case ("COUNT", 1):
            RESPReply.integer(names.count, into: &out)
        case ("LIST", 1):
            RESPReply.arrayHeader(names.count, into: &out)
            for name in names { RESPReply.bulk(name.lowercased().utf8, into: &out) }
        case ("INFO", _):
            let requested = arguments.count == 1 ? names : arguments.dropFirst().map(Self.commandName)
            RESPReply.arrayHeader(requested.count, into: &out)
            for name in requested {
                if Self.commandArity[name] != nil {
                    Self.commandEntry(name, version: version, into: &out)
                } else {
                    RESPReply.null(version, into: &out)
                }
            }
        case ("DOCS", _):
            RESPReply.mapHeader(0, version, into: &out)  // no documentation is served
        case ("GETKEYS", 2...):
            commandKeys(Array(arguments.dropFirst()), into: &out)
        case ("COUNT", _), ("LIST", _), ("GETKEYS", _):
            Self.wrongArity("COMMAND", subcommand, into: &out)
        default:
            Self.unknownSubcommand(first, of: "COMMAND", into: &out)
        }
    }

    /// `COMMAND GETKEYS command arg…`: the keys of that request, as Redis answers it.
    private func commandKeys(_ request: [ArraySlice<UInt8>], into out: inout [UInt8]) {
        let name = Self.commandName(request[0])
        guard Self.commandArity[name] != nil else {
            return RESPReply.error("ERR Invalid command specified", into: &out)
        }
        if Self.refusal(of: request, name: name) != nil {
            return RESPReply.error("ERR Invalid number of arguments specified for command", into: &out)
        }
        guard let positions = Self.keyPositions[name] else {
            return RESPReply.error("ERR The command has no key arguments", into: &out)
        }
        let indices = Array(positions.indices(inRequestOf: request.count))
        RESPReply.arrayHeader(indices.count, into: &out)
        for index in indices { RESPReply.bulk(request[index], into: &out) }
    }

    /// One command's entry: `[name, arity, flags, first key, last key, step, ACL categories,
    /// tips, key specs, subcommands]`, Redis 7's ten fields (the last four empty here). Any thread.
    static func commandEntry(_ name: String, version: RESPVersion, into out: inout [UInt8]) {
        let flags = commandFlags[name] ?? []
        let keys = keyPositions[name] ?? KeyPositions(first: 0, last: 0, step: 0)
        RESPReply.arrayHeader(10, into: &out)
        RESPReply.bulk(name.lowercased().utf8, into: &out)
        RESPReply.integer(commandArity[name] ?? 0, into: &out)
        RESPReply.setHeader(flags.count, version, into: &out)
        for flag in flags { RESPReply.simple(flag, into: &out) }
        RESPReply.integer(keys.first, into: &out)
        RESPReply.integer(keys.last, into: &out)
        RESPReply.integer(keys.step, into: &out)
        let categories = CommandCategory.categories(of: name)
        RESPReply.setHeader(categories.count, version, into: &out)
        for category in categories { RESPReply.simple("@\(category.rawValue)", into: &out) }
        for _ in 0..<3 { RESPReply.arrayHeader(0, into: &out) }  // tips, key specs, subcommands
    }
}
