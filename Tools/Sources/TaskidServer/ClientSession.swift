import TaskidRESP

/// One connection's protocol state: its id, the protocol it speaks, its name, and where it stands
/// with `MULTI`. Owned by the connection's task on the front loop.
package struct ClientSession {
    /// What `CLIENT ID` and `HELLO` answer; unique for the server's lifetime, from 1.
    let id: UInt64
    /// RESP2 until `HELLO 3`.
    var protocolVersion = RESPVersion.resp2
    /// Set by `CLIENT SETNAME` or `HELLO … SETNAME`.
    var name: [UInt8]?
    /// Outside a transaction, queuing one, or in one that `EXEC` will abort.
    var transaction = TransactionState.none
    /// Reply bytes queued on the connection and not yet sent when the current command began,
    /// which count against the output limit with its reply (`TASK.TRACE`).
    var unsentReplyBytes = 0
    /// Since when (`MonotonicClock` nanoseconds) the replies queued for it have stayed above
    /// the soft output limit; nil while they are under it.
    var overSoftOutputLimitSince: UInt64?

    /// The user it is authenticated as; nil until it authenticates, when new connections must.
    var user: AccessUser? {
        didSet { mayRunEverything = user?.mayRunEverything ?? false }
    }
    /// Authenticated as a user that may run every command: its commands are not checked one by
    /// one (and a plain SET takes the fast path).
    private(set) var mayRunEverything = false

    init(id: UInt64, user: AccessUser? = nil) {
        self.id = id
        self.user = user
        mayRunEverything = user?.mayRunEverything ?? false
    }

    /// Inside `MULTI`: commands other than EXEC, DISCARD, MULTI and QUIT are queued, not run.
    var isQueuing: Bool {
        if case .none = transaction { return false }
        return true
    }
}
