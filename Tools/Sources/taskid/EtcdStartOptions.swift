import ArgumentParser

/// `taskid serve --etcd`'s options for its start: how long to wait for etcd, and what to do
/// when another live node holds this node's id. Parsed on the main task; a value type, any
/// thread.
struct EtcdStartOptions: ParsableArguments {
    @Option(
        name: .customLong("etcd-connect-timeout"), parsing: .unconditional,
        help: ArgumentHelp(
            """
            With --etcd: exit 69 if etcd has not confirmed the node's lease this many seconds after \
            start (0, the default: wait as long as it takes, saying what it waits for once a second).
            """,
            valueName: "seconds"))
    var connectTimeoutSeconds = 0

    @Flag(
        help: """
            With --etcd: when a live node holds this node's id at start, wait for it to go instead of \
            exiting 64 (a node restarted at once after a crash waits for its old lease to expire).
            """)
    var waitForID = false

    /// Checks the options alone, and that they come with `--etcd`. Any thread.
    /// - Throws: `ValidationError` naming the option.
    func check(etcdGiven: Bool) throws {
        guard (0...3_600).contains(connectTimeoutSeconds) else {
            throw ValidationError(
                "--etcd-connect-timeout takes an integer in 0...3600, got '\(connectTimeoutSeconds)'")
        }
        if !etcdGiven && connectTimeoutSeconds != 0 { throw ValidationError("--etcd-connect-timeout needs --etcd") }
        if !etcdGiven && waitForID { throw ValidationError("--wait-for-id needs --etcd") }
    }
}
