import TaskidCluster
import TaskidRESP

/// `AUTH`, and the checks every command passes when a connection's user may not run
/// everything: authenticated first, then allowed by its ACL rules. Replies and errors are
/// Redis's. Front loop only.
extension RegistryServer {
    /// Commands a client may send before it authenticates (HELLO only with its AUTH option).
    static let commandsBeforeAuthentication: Set<String> = ["AUTH", "HELLO", "QUIT"]

    /// Why `session` may not run `request` (named `name`): not authenticated (`-NOAUTH`), or not
    /// allowed by its user's rules (`-NOPERM`); nil when it may. An unknown command is left to
    /// `refusal(of:name:)`. Any thread.
    func accessDenial(of request: [ArraySlice<UInt8>], name: String, session: ClientSession) -> String? {
        guard let user = session.user else {
            // HELLO decides itself, once it has parsed its options (`hello`): only its AUTH
            // option lets it run. As Redis 7.0, an unknown command or a wrong arity is answered
            // as such (by `refusal(of:name:)`) before NOAUTH.
            if Self.commandsBeforeAuthentication.contains(name) || Self.refusal(of: request, name: name) != nil {
                return nil
            }
            return "NOAUTH Authentication required."
        }
        guard Self.commandArity[name] != nil, !Self.commandsBeforeAuthentication.contains(name) else { return nil }
        guard !user.allowed.contains(name) else {
            // A user without `~*` may name no key (Redis: no pattern of its matches the key).
            guard !user.mayAccessAllKeys, let positions = Self.keyPositions[name],
                positions.indices(inRequestOf: request.count).contains(where: { _ in true })
            else { return nil }
            return "NOPERM this user has no permissions to access one of the keys used as arguments"
        }
        // Redis 7.0's words, a container command named with its subcommand ('config|get').
        var shown = name.lowercased()
        if Self.containerCommands.contains(name), request.count > 1 {
            shown += "|" + String(decoding: request[1], as: UTF8.self).lowercased()
        }
        return "NOPERM this user has no permissions to run the '\(shown)' command"
    }

    /// Commands Redis names with their subcommand when it refuses them. Any thread.
    static let containerCommands: Set<String> = ["CONFIG", "CLIENT", "CLUSTER", "COMMAND"]

    /// `AUTH password` (the `default` user) or `AUTH username password`.
    func auth(_ arguments: [ArraySlice<UInt8>], session: inout ClientSession, into out: inout [UInt8]) {
        guard arguments.count <= 2 else { return RESPReply.error("ERR syntax error", into: &out) }
        let name = arguments.count == 2 ? String(decoding: arguments[0], as: UTF8.self) : "default"
        if arguments.count == 1, configuration.access.userOfNewConnections != nil {
            return RESPReply.error(
                "ERR AUTH <password> called without any password configured for the default user. "
                    + "Are you sure your configuration is correct?", into: &out)
        }
        guard let user = authenticate(name: name, password: arguments[arguments.count - 1], session: &session) else {
            return RESPReply.error(Self.wrongPassword, into: &out)
        }
        session.user = user
        RESPReply.simple("OK", into: &out)
    }

    /// The user `name` logs in with `password`, or nil (logged: a failed login is worth an
    /// operator's eye; a line a second at most, with how many failed since, so that a client
    /// sending wrong passwords cannot flood the log). The session keeps its user either way
    /// until the caller sets it. Front loop only.
    func authenticate(name: String, password: ArraySlice<UInt8>, session: inout ClientSession) -> AccessUser? {
        if let user = configuration.access.authenticate(name: name, password: password) { return user }
        if let failed = front.value.failedLoginLog.note(at: MonotonicClock.nanoseconds()) {
            logger.notice(
                "authentication failed",
                metadata: [
                    "client": "\(session.id)", "user": "\(QuotedText.excerpt(name))",
                    "failed_since_last_line": "\(failed)",
                ])
        }
        return nil
    }

    /// Redis's answer to a HELLO without its AUTH option from a client that has not logged in.
    /// Any thread.
    package static let helloBeforeAuthentication =
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        + "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select "
        + "the RESP protocol version at the same time"

    /// Redis's answer to a wrong user name or password, or a user that is off. Any thread.
    package static let wrongPassword = "WRONGPASS invalid username-password pair or user is disabled."

    /// What a client from another host is told in protected mode before it is closed. Any
    /// thread.
    static let protectedModeDenial =
        "DENIED taskid is running in protected mode because protected mode is enabled and no password is set "
        + "for the default user. In this mode connections are only accepted from the loopback interface. To "
        + "accept clients from other hosts, either set a password (--requirepass, --requirepass-file or "
        + "--acl-file), or, if you are sure every host that can reach this port may use it, start taskid "
        + "with --protected-mode no."
}
