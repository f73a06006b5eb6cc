import TaskidRESP

/// The commands about the connection and the server rather than keys: `HELLO`, `CLIENT` and
/// `CONFIG GET`, with Redis's replies and errors. Front loop only.
extension RegistryServer {
    /// `HELLO [protover [AUTH username password] [SETNAME name]]`: switches the connection to
    /// RESP2 or RESP3 and answers the server's description as a map (RESP3) or a flat array
    /// (RESP2). Its AUTH option logs in as `AUTH username password` does; a wrong one changes
    /// nothing and answers `-WRONGPASS`.
    func hello(_ arguments: [ArraySlice<UInt8>], session: inout ClientSession, into out: inout [UInt8]) {
        var version = session.protocolVersion
        var name = session.name
        var credentials: (user: String, password: ArraySlice<UInt8>)?
        if let first = arguments.first {
            guard let number = Int(String(decoding: first, as: UTF8.self)) else {
                return RESPReply.error("ERR Protocol version is not an integer or out of range", into: &out)
            }
            guard let requested = RESPVersion(rawValue: number) else {
                return RESPReply.error("NOPROTO unsupported protocol version", into: &out)
            }
            version = requested
            var index = 1
            while index < arguments.count {
                let option = Self.commandName(arguments[index])
                let remaining = arguments.count - index - 1
                if option == "AUTH" && remaining >= 2 {
                    credentials = (String(decoding: arguments[index + 1], as: UTF8.self), arguments[index + 2])
                    index += 3
                } else if option == "SETNAME" && remaining >= 1 {
                    guard let valid = Self.validClientName(arguments[index + 1], into: &out) else { return }
                    name = valid.isEmpty ? nil : valid  // an empty name clears it, as CLIENT SETNAME ""
                    index += 2
                } else {
                    let shown = String(decoding: arguments[index].prefix(128), as: UTF8.self)
                    return RESPReply.error("ERR Syntax error in HELLO option '\(shown)'", into: &out)
                }
            }
        }
        // Nothing changes unless the whole command is valid, and its AUTH too; a client that has
        // not logged in gets nothing without that option (not even the server's description).
        guard session.user != nil || credentials != nil else {
            return RESPReply.error(Self.helloBeforeAuthentication, into: &out)
        }
        if let credentials {
            guard let user = authenticate(name: credentials.user, password: credentials.password, session: &session)
            else { return RESPReply.error(Self.wrongPassword, into: &out) }
            session.user = user
        }
        session.protocolVersion = version
        session.name = name
        RESPReply.mapHeader(7, version, into: &out)
        RESPReply.bulk("server".utf8, into: &out)
        RESPReply.bulk("taskid".utf8, into: &out)
        RESPReply.bulk("version".utf8, into: &out)
        RESPReply.bulk(taskidVersion.utf8, into: &out)
        RESPReply.bulk("proto".utf8, into: &out)
        RESPReply.integer(version.rawValue, into: &out)
        RESPReply.bulk("id".utf8, into: &out)
        RESPReply.integer(Int(session.id), into: &out)
        RESPReply.bulk("mode".utf8, into: &out)
        RESPReply.bulk((cluster == nil ? "standalone" : "cluster").utf8, into: &out)
        RESPReply.bulk("role".utf8, into: &out)
        RESPReply.bulk("master".utf8, into: &out)
        RESPReply.bulk("modules".utf8, into: &out)
        RESPReply.arrayHeader(0, into: &out)
    }

    /// `CLIENT ID | GETNAME | SETNAME name | SETINFO attribute value`.
    func client(_ arguments: [ArraySlice<UInt8>], session: inout ClientSession, into out: inout [UInt8]) {
        let subcommand = Self.commandName(arguments[0])
        switch (subcommand, arguments.count) {
        case ("ID", 1):
            RESPReply.integer(Int(session.id), into: &out)
        case ("GETNAME", 1):
            if let name = session.name {
                RESPReply.bulk(name, into: &out)
            } else {
                RESPReply.null(session.protocolVersion, into: &out)
            }
        case ("SETNAME", 2):
            guard let name = Self.validClientName(arguments[1], into: &out) else { return }
            session.name = name.isEmpty ? nil : name
            RESPReply.simple("OK", into: &out)
        case ("SETINFO", 3):
            // Client libraries announce their name and version; nothing here uses them.
            RESPReply.simple("OK", into: &out)
        case ("ID", _), ("GETNAME", _), ("SETNAME", _), ("SETINFO", _):
            Self.wrongArity("CLIENT", subcommand, into: &out)
        default:
            Self.unknownSubcommand(arguments[0], of: "CLIENT", into: &out)
        }
    }

    /// A client name, or nil after answering the error Redis gives for spaces and newlines.
    private static func validClientName(_ bytes: ArraySlice<UInt8>, into out: inout [UInt8]) -> [UInt8]? {
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            RESPReply.error("ERR Client names cannot contain spaces, newlines or special characters.", into: &out)
            return nil
        }
        return Array(bytes)
    }

    /// `CONFIG GET name [name …]`: the few settings clients and redis-benchmark ask for, as a
    /// map (RESP3) or a flat array (RESP2). Names match exactly, ignoring case.
    func configGet(_ arguments: [ArraySlice<UInt8>], version: RESPVersion, into out: inout [UInt8]) {
        guard Self.commandName(arguments[0]) == "GET" else {
            return Self.unknownSubcommand(arguments[0], of: "CONFIG", into: &out)
        }
        guard arguments.count >= 2 else {
            return Self.wrongArity("CONFIG", "GET", into: &out)
        }
        let values = ["save": "", "appendonly": "no", "maxclients": String(configuration.maxClients)]
        var matches: [(String, String)] = []
        for requested in arguments.dropFirst() {
            let name = String(decoding: requested, as: UTF8.self).lowercased()
            if let value = values[name], !matches.contains(where: { $0.0 == name }) { matches.append((name, value)) }
        }
        RESPReply.mapHeader(matches.count, version, into: &out)
        for (name, value) in matches {
            RESPReply.bulk(name.utf8, into: &out)
            RESPReply.bulk(value.utf8, into: &out)
        }
    }
}
