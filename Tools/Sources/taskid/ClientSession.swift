/// One connection's protocol state: its id, the protocol it speaks, its name, and the commands
/// it has queued inside `MULTI`. Owned by the connection's task on the front loop.
struct ClientSession {
    /// What `CLIENT ID` and `HELLO` answer; unique for the server's lifetime, from 1.
    let id: UInt64
    /// RESP2 until `HELLO 3`.
    var protocolVersion = RESPVersion.resp2
    /// Set by `CLIENT SETNAME` or `HELLO … SETNAME`.
    var name: [UInt8]?
    /// The commands queued since `MULTI` (copies: the parser's buffer moves on); nil outside a
    /// transaction.
    var queuedCommands: [[ArraySlice<UInt8>]]?
    /// A command refused while queuing (unknown, wrong arity): `EXEC` then runs nothing and
    /// answers `EXECABORT`, as Redis does.
    var transactionRefused = false

    init(id: UInt64) { self.id = id }

    /// Inside `MULTI`: commands other than EXEC, DISCARD, MULTI and QUIT are queued, not run.
    var isQueuing: Bool { queuedCommands != nil }
}
