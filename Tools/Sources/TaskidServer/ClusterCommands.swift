import TaskidCluster
import TaskidRESP

/// Redis Cluster's side of the protocol, for a node started with `--cluster-config`: which
/// commands have keys and where, the redirections (`-MOVED`, `-CROSSSLOT`, `-CLUSTERDOWN`), and
/// `CLUSTER SLOTS | SHARDS | NODES | MYID | INFO | KEYSLOT`. Front loop only, unless marked.
extension RegistryServer {
    /// Where a command's keys are among its arguments (the name is argument 0), as `COMMAND`
    /// reports them: from `first` to `last` (-1: the last argument) every `step`. A value type;
    /// any thread.
    struct KeyPositions: Sendable {
        let first: Int
        let last: Int
        let step: Int

        /// The indices of the keys in a request of `count` arguments (the name included).
        func indices(inRequestOf count: Int) -> StrideThrough<Int> {
            stride(from: first, through: last < 0 ? count + last : last, by: step)
        }
    }

    /// The commands that take keys. Any thread.
    static let keyPositions: [String: KeyPositions] = [
        "SET": KeyPositions(first: 1, last: 1, step: 1), "GET": KeyPositions(first: 1, last: 1, step: 1),
        "DEL": KeyPositions(first: 1, last: -1, step: 1), "EXISTS": KeyPositions(first: 1, last: -1, step: 1),
        "TASK.PHASE": KeyPositions(first: 1, last: 1, step: 1), "TASK.INFO": KeyPositions(first: 1, last: 1, step: 1),
    ]

    /// Where a request's keys hash. Any thread.
    enum KeySlot: Equatable {
        /// The command takes no key.
        case keyless
        /// Every key hashes to this slot.
        case slot(Int)
        /// The keys hash to different slots.
        case crossSlot
    }

    /// The slot of `request`'s keys (it has passed `refusal(of:name:)`). Any thread.
    static func keySlot(of request: [ArraySlice<UInt8>], name: String) -> KeySlot {
        guard let positions = keyPositions[name] else { return .keyless }
        var slot: Int?
        for index in positions.indices(inRequestOf: request.count) {
            let keySlot = HashSlot.of(request[index])
            if let slot, slot != keySlot { return .crossSlot }
            slot = keySlot
        }
        return slot.map(KeySlot.slot) ?? .keyless
    }

    /// In cluster mode, the error that sends `request` elsewhere, as Redis words it: nil when
    /// this node serves its keys (or it has none), and always nil outside cluster mode.
    func redirection(of request: [ArraySlice<UInt8>], name: String) -> String? {
        guard let cluster else { return nil }  // standalone: every key is this node's
        switch Self.keySlot(of: request, name: name) {
        case .keyless: return nil
        case .crossSlot: return Self.crossSlotError
        case .slot(let slot): return Self.redirection(toSlot: slot, in: cluster)
        }
    }

    /// The error for a key of `slot`, nil when this node serves it. Any thread.
    static func redirection(toSlot slot: Int, in cluster: ClusterConfiguration) -> String? {
        guard let owner = cluster.owner(ofSlot: slot) else { return "CLUSTERDOWN Hash slot not served" }
        guard owner != cluster.myIndex else {
            // On etcd: serve only while the lease is certainly alive (`LeaseFence`).
            if let until = cluster.servingUntil, MonotonicClock.nanoseconds() >= until {
                return "CLUSTERDOWN The node's claim on this slot is not confirmed (its etcd lease may have expired)"
            }
            return nil
        }
        let node = cluster.nodes[owner]
        return "MOVED \(slot) \(addressText(host: node.host, port: node.port))"
    }

    /// The error of a request whose keys hash to several slots, as Redis words it. Any thread.
    static let crossSlotError = "CROSSSLOT Keys in request don't hash to the same slot"

    /// `HOST:PORT`, as Redis 7.0 writes a node's address in `-MOVED` and `CLUSTER NODES` (an IPv6
    /// address without brackets: clients split at the last colon). Any thread.
    package static func addressText(host: String, port: Int) -> String { "\(host):\(port)" }

    /// `CLUSTER subcommand …`.
    func cluster(_ arguments: [ArraySlice<UInt8>], version: RESPVersion, into out: inout [UInt8]) {
        guard let cluster else {
            return RESPReply.error("ERR This instance has cluster support disabled", into: &out)
        }
        let subcommand = Self.commandName(arguments[0])
        switch (subcommand, arguments.count) {
        case ("SLOTS", 1):
            clusterSlots(cluster, version: version, into: &out)
        case ("SHARDS", 1):
            clusterShards(cluster, version: version, into: &out)
        case ("NODES", 1):
            RESPReply.verbatimText(Self.nodesText(cluster), version, into: &out)
        case ("MYID", 1):
            RESPReply.bulk(cluster.myself.id.utf8, into: &out)
        case ("INFO", 1):
            RESPReply.verbatimText(Self.infoText(cluster), version, into: &out)
        case ("KEYSLOT", 2):
            RESPReply.integer(HashSlot.of(arguments[1]), into: &out)
        case ("SLOTS", _), ("SHARDS", _), ("NODES", _), ("MYID", _), ("INFO", _), ("KEYSLOT", _):
            Self.wrongArity("CLUSTER", subcommand, into: &out)
        default:
            Self.unknownSubcommand(arguments[0], of: "CLUSTER", into: &out)
        }
    }

    /// Every range of consecutive slots with one owner, in slot order, with its owner's index.
    /// Any thread.
    static func slotRuns(_ cluster: ClusterConfiguration) -> [(range: ClosedRange<Int>, node: Int)] {
        var runs: [(range: ClosedRange<Int>, node: Int)] = []
        var slot = 0
        while slot < HashSlot.count {
            guard let owner = cluster.owner(ofSlot: slot) else {
                slot += 1
                continue
            }
            var last = slot
            while last + 1 < HashSlot.count && cluster.owner(ofSlot: last + 1) == owner { last += 1 }
            runs.append((slot...last, owner))
            slot = last + 1
        }
        return runs
    }

    /// `CLUSTER SLOTS`: `[first, last, [host, port, id, {}]]` per run of slots (no replicas; the
    /// metadata map is empty: no hostnames).
    private func clusterSlots(_ cluster: ClusterConfiguration, version: RESPVersion, into out: inout [UInt8]) {
        let runs = Self.slotRuns(cluster)
        RESPReply.arrayHeader(runs.count, into: &out)
        for run in runs {
            let node = cluster.nodes[run.node]
            RESPReply.arrayHeader(3, into: &out)
            RESPReply.integer(run.range.lowerBound, into: &out)
            RESPReply.integer(run.range.upperBound, into: &out)
            RESPReply.arrayHeader(4, into: &out)
            RESPReply.bulk(node.host.utf8, into: &out)
            RESPReply.integer(node.port, into: &out)
            RESPReply.bulk(node.id.utf8, into: &out)
            RESPReply.mapHeader(0, version, into: &out)
        }
    }

    /// `CLUSTER SHARDS`: one shard per node, a map of its `slots` (first and last of each run)
    /// and its one `nodes` entry (a primary, always online: there is no failure detection).
    private func clusterShards(_ cluster: ClusterConfiguration, version: RESPVersion, into out: inout [UInt8]) {
        let runs = Self.slotRuns(cluster)
        RESPReply.arrayHeader(cluster.nodes.count, into: &out)
        for (index, node) in cluster.nodes.enumerated() {
            RESPReply.mapHeader(2, version, into: &out)
            RESPReply.bulk("slots".utf8, into: &out)
            let own = runs.filter { $0.node == index }
            RESPReply.arrayHeader(own.count * 2, into: &out)
            for run in own {
                RESPReply.integer(run.range.lowerBound, into: &out)
                RESPReply.integer(run.range.upperBound, into: &out)
            }
            RESPReply.bulk("nodes".utf8, into: &out)
            RESPReply.arrayHeader(1, into: &out)
            // Redis 7.0's fields, in its order.
            RESPReply.mapHeader(7, version, into: &out)
            RESPReply.bulk("id".utf8, into: &out)
            RESPReply.bulk(node.id.utf8, into: &out)
            RESPReply.bulk("port".utf8, into: &out)
            RESPReply.integer(node.port, into: &out)
            for (field, value) in [("ip", node.host), ("endpoint", node.host)] {
                RESPReply.bulk(field.utf8, into: &out)
                RESPReply.bulk(value.utf8, into: &out)
            }
            RESPReply.bulk("role".utf8, into: &out)
            RESPReply.bulk("master".utf8, into: &out)
            RESPReply.bulk("replication-offset".utf8, into: &out)
            RESPReply.integer(0, into: &out)
            RESPReply.bulk("health".utf8, into: &out)
            RESPReply.bulk("online".utf8, into: &out)
        }
    }

    /// `CLUSTER NODES`: a line per node, `id host:port@0 flags - 0 0 epoch connected slots…`:
    /// `myself,master` for this node, `master` for the others; the bus port is 0 (there is no
    /// cluster bus) and each node's config epoch is its place in the file, from 1. Any thread.
    package static func nodesText(_ cluster: ClusterConfiguration) -> String {
        let runs = slotRuns(cluster)
        var text = ""
        for (index, node) in cluster.nodes.enumerated() {
            let flags = index == cluster.myIndex ? "myself,master" : "master"
            var line =
                "\(node.id) \(addressText(host: node.host, port: node.port))@0 \(flags) - 0 0 \(index + 1) connected"
            for run in runs where run.node == index {
                line +=
                    run.range.count == 1
                    ? " \(run.range.lowerBound)" : " \(run.range.lowerBound)-\(run.range.upperBound)"
            }
            text += line + "\n"
        }
        return text
    }

    /// `CLUSTER INFO`: the fields clients read, in Redis's format. `cluster_state` is `ok`
    /// when every slot has a node and this node can answer for its own: on etcd, not while its
    /// lease fence is closed (Redis's meaning too: whether the node accepts queries). Any thread.
    package static func infoText(_ cluster: ClusterConfiguration) -> String {
        let assigned = slotRuns(cluster).reduce(0) { $0 + $1.range.count }
        let fenceOpen = cluster.servingUntil.map { MonotonicClock.nanoseconds() < $0 } ?? true
        let lines = [
            "cluster_state:\(cluster.coversEverySlot && fenceOpen ? "ok" : "fail")",
            "cluster_slots_assigned:\(assigned)", "cluster_slots_ok:\(assigned)", "cluster_slots_pfail:0",
            "cluster_slots_fail:0", "cluster_known_nodes:\(cluster.nodes.count)",
            "cluster_size:\(cluster.nodes.filter { !$0.slotRanges.isEmpty }.count)",
            "cluster_current_epoch:\(cluster.nodes.count)", "cluster_my_epoch:\(cluster.myIndex + 1)",
            "cluster_stats_messages_sent:0", "cluster_stats_messages_received:0",
            "total_cluster_links_buffer_limit_exceeded:0",
        ]
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
