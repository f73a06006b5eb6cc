/// The ACL categories of this server's commands, named as Redis names them, for `--acl-file`'s
/// `+@category` and `-@category`. A command may be in several. A value type; any thread.
package enum CommandCategory: String, CaseIterable, Sendable {
    /// Reads keys or the registry's state.
    case read
    /// Declares or removes keys.
    case write
    /// Works on the key space as a whole.
    case keyspace
    /// Operator commands: `TASK.TRACE` (which can hold a large trace) and `CONFIG`.
    case admin
    /// Commands that can reveal or change more than a client's own keys.
    case dangerous
    /// The connection's own state: PING, AUTH, HELLO, CLIENT …
    case connection
    /// MULTI, EXEC, DISCARD.
    case transaction
    /// Commands that answer in constant time.
    case fast
    /// The others.
    case slow

    /// The commands in this category, by upper-case name.
    var commands: Set<String> {
        switch self {
        case .read: return ["GET", "EXISTS", "DBSIZE", "TASK.PHASE", "TASK.INFO", "TASK.QUEUE"]
        case .write: return ["SET", "DEL"]
        case .keyspace: return ["DEL", "EXISTS", "DBSIZE"]
        case .admin: return ["TASK.TRACE", "CONFIG"]
        case .dangerous: return ["TASK.TRACE", "CONFIG", "INFO"]
        case .connection:
            return [
                "PING", "ECHO", "QUIT", "AUTH", "HELLO", "CLIENT", "SELECT", "COMMAND", "READONLY", "READWRITE",
                "ASKING",
            ]
        case .transaction: return ["MULTI", "EXEC", "DISCARD"]
        case .fast:
            return [
                "GET", "EXISTS", "DBSIZE", "TASK.PHASE", "TASK.INFO", "PING", "ECHO", "AUTH", "SELECT", "READONLY",
                "READWRITE",
                "ASKING", "MULTI", "DISCARD",
            ]
        case .slow:
            return Self.allCommands.subtracting(Self.fast.commands)
        }
    }

    /// Every command the server has: what `+@all` allows.
    static let allCommands = Set(RegistryServer.commandArity.keys)

    /// The categories `name` is in, for `COMMAND`'s entry. Any thread.
    package static func categories(of name: String) -> [CommandCategory] {
        allCases.filter { $0.commands.contains(name) }
    }
}
