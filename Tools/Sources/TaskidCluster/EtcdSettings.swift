/// `taskid serve --etcd ENDPOINTS [--etcd-lease-seconds N] [--etcd-cluster NAME]`: where the slot
/// map lives and how long a node's claim outlives its silence, checked at start like every
/// other setting (exit 64 with the setting and the reason). A value type; any thread.
package struct EtcdSettings: Sendable, Equatable {
    /// The etcd members' base URLs (`http://host:port`), tried in order.
    package let endpoints: [String]
    /// The lease's time to live: a node that stops renewing it (dead, paused, cut off from
    /// etcd) loses its slots this long after its last renewal, and stops serving them a fifth
    /// of it earlier by its own clock (`LeaseFence`).
    package let leaseSeconds: Int
    /// The cluster's name: its keys live under `/taskid/<name>/`, so that several clusters can
    /// share one etcd.
    let clusterName: String
    /// `--wait-for-id`: at start, wait for a live node holding this node's id to go, rather
    /// than refuse to start.
    package var waitForID = false
    /// `--etcd-connect-timeout`: the longest wait at start for etcd to confirm the node's
    /// lease, in seconds, before exiting 69; 0 for no bound.
    package var connectTimeoutSeconds = 0

    /// The lease times accepted, in seconds (etcd grants whole seconds; a node renews its
    /// lease every fourth of it).
    static let leaseSecondsRange = 1...60
    /// The default lease: 3 s.
    package static let defaultLeaseSeconds = 3

    /// The keys' prefix.
    package var prefix: String { "/taskid/\(clusterName)/" }

    /// Parses `--etcd`'s comma-separated endpoints and checks the other two settings.
    /// - Throws: `EtcdSettingsError` naming the setting and why.
    package init(endpoints list: String, leaseSeconds: Int, clusterName: String) throws(EtcdSettingsError) {
        func refuse(_ setting: String, _ value: String, _ reason: String) -> EtcdSettingsError {
            EtcdSettingsError(
                description: "\(setting) '\(QuotedText.excerpt(value))' cannot be used: \(reason)")
        }
        let entries = list.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !list.isEmpty, entries.allSatisfy({ !$0.isEmpty }) else {
            throw refuse("--etcd", list, "give one or more http://HOST:PORT, separated by commas, none empty")
        }
        guard entries.count <= 16 else { throw refuse("--etcd", list, "more than 16 endpoints") }
        for entry in entries {
            if let problem = HTTPURLCheck.problem(
                with: entry, pathAllowed: false, pathNote: "etcd's API is at its root")
            {
                throw refuse("--etcd", entry, problem)
            }
        }
        let bases = entries.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        guard Set(bases).count == bases.count else { throw refuse("--etcd", list, "an endpoint is listed twice") }
        guard Self.leaseSecondsRange.contains(leaseSeconds) else {
            throw EtcdSettingsError(
                description:
                    "--etcd-lease-seconds takes an integer in \(Self.leaseSecondsRange.lowerBound)...\(Self.leaseSecondsRange.upperBound), got '\(leaseSeconds)'"
            )
        }
        guard (1...64).contains(clusterName.utf8.count),
            clusterName.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            })
        else {
            throw refuse("--etcd-cluster", clusterName, "1 to 64 letters, digits, '-', '_' or '.'")
        }
        self.endpoints = bases
        self.leaseSeconds = leaseSeconds
        self.clusterName = clusterName
    }
}

/// An etcd setting that cannot be used, and why. A value type; any thread.
package struct EtcdSettingsError: Error, Equatable, CustomStringConvertible {
    package let description: String
}
