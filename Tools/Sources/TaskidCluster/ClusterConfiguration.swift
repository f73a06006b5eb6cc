#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One node of a static cluster: its id, the address clients reach it at, and its slots. A
/// value type; any thread.
package struct ClusterNode: Sendable, Equatable {
    /// The node's name in `CLUSTER NODES`, `CLUSTER SLOTS` and `CLUSTER MYID`.
    package let id: String
    /// The address given to clients in `-MOVED` and the `CLUSTER` replies (an IPv6 address
    /// without the brackets the file may give it). The node listens on `--host`, not on this.
    package let host: String
    /// The node's port, given to clients; the port it listens on unless `--port` says otherwise.
    package let port: Int
    /// The slot ranges the node serves, in the order written.
    package let slotRanges: [ClosedRange<Int>]

    /// A node with its id, address and slots.
    package init(id: String, host: String, port: Int, slotRanges: [ClosedRange<Int>]) {
        self.id = id
        self.host = host
        self.port = port
        self.slotRanges = slotRanges
    }
}

/// Why a cluster configuration was refused: the file and line, and what is wrong. Any thread.
package struct ClusterConfigurationError: Error, Equatable, CustomStringConvertible {
    package let description: String
}

/// `taskid serve --cluster-config FILE --cluster-node ID`: every node of the cluster with its
/// slots, and which one this process is. Static: nodes do not gossip, fail over or move slots;
/// every node is started with the same file, and a node answers only for its own slots
/// (`-MOVED` to the owner for the others, `-CLUSTERDOWN` for slots nobody serves).
///
/// The file has one node per line, `ID HOST:PORT SLOTS...`, where each of SLOTS is a slot or a
/// range `FIRST-LAST` in 0...16383; `#` starts a comment, and blank lines are skipped:
///
///     # taskid cluster: two nodes, half the slots each
///     node-a 127.0.0.1:7001 0-8191
///     node-b 127.0.0.1:7002 8192-16383
///
/// An id is 1 to 40 letters, digits, `-`, `_` or `.`. A value type; any thread.
package struct ClusterConfiguration: Sendable, Equatable {
    /// Every node, in the file's order.
    package let nodes: [ClusterNode]
    /// This process's node, an index into `nodes`.
    package let myIndex: Int
    /// Each slot's node, an index into `nodes`, or -1 when no node serves it.
    private let owners: [Int16]
    /// On etcd (`--etcd`), until when (monotonic nanoseconds, the front loop's clock) this node
    /// may serve its own slots: its lease fence (`LeaseFence`). nil for a static cluster.
    package let servingUntil: UInt64?
    /// On etcd, each block's claim revision where this node serves it (0 elsewhere): the
    /// block's part of the fencing token of the runs started here (`FencingToken`). Empty for
    /// a static cluster.
    package let claimRevisions: [Int64]

    /// This process's node.
    package var myself: ClusterNode { nodes[myIndex] }

    /// The node serving `slot`, nil when none does.
    package func owner(ofSlot slot: Int) -> Int? {
        let owner = owners[slot]
        return owner < 0 ? nil : Int(owner)
    }

    /// Whether every slot is served by some node (`CLUSTER INFO`'s `cluster_state`).
    package var coversEverySlot: Bool { !owners.contains(-1) }

    /// The slots no node serves, as ranges in ascending order (empty when every slot is
    /// served): what `taskid serve` warns of at start.
    package var unservedSlots: [ClosedRange<Int>] {
        var ranges: [ClosedRange<Int>] = []
        var slot = 0
        while slot < owners.count {
            guard owners[slot] < 0 else {
                slot += 1
                continue
            }
            let first = slot
            while slot < owners.count && owners[slot] < 0 { slot += 1 }
            ranges.append(first...(slot - 1))
        }
        return ranges
    }

    private init(nodes: [ClusterNode], myIndex: Int, owners: [Int16], servingUntil: UInt64?) {
        claimRevisions = []
        self.nodes = nodes
        self.myIndex = myIndex
        self.owners = owners
        self.servingUntil = servingUntil
    }

    /// The most nodes a configuration may list (an index fits the slot table's `Int16`).
    static let maxNodes = 1_000

    /// Reads and checks the configuration in `path`, `myself` being this process's id. Only a
    /// regular file is read: a directory, a device, a FIFO or a socket is refused without
    /// being opened for reading in a way that could block (a FIFO with no writer would hold
    /// the start before the signal handlers are installed).
    /// - Throws: `ClusterConfigurationError` naming the file, the line and the fault, or why
    ///   the file cannot be read.
    package static func load(path: String, myself: String) throws(ClusterConfigurationError) -> ClusterConfiguration {
        let shown = QuotedText.excerpt(path)
        func refuse(_ reason: String) -> ClusterConfigurationError {
            ClusterConfigurationError(description: "cannot read \(shown): \(reason)")
        }
        // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw refuse(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw refuse(String(cString: strerror(errno))) }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw refuse(
                "not a regular file (\((status.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "a special file"))")
        }
        let limit = 16 << 20
        guard status.st_size <= limit else {
            throw ClusterConfigurationError(description: "\(shown) is larger than 16 MiB")
        }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size) + 1)
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                read(descriptor, buffer.baseAddress! + filled, buffer.count - filled)
            }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw refuse(String(cString: strerror(errno))) }
            if count == 0 { break }
            filled += count
        }
        // One byte more than its size was asked for: a file that grew since is caught here.
        guard filled <= limit else { throw ClusterConfigurationError(description: "\(shown) is larger than 16 MiB") }
        return try parse(String(decoding: bytes[..<filled], as: UTF8.self), myself: myself, source: shown)
    }

    /// Parses and checks a configuration's text (see the type's description).
    /// - Throws: `ClusterConfigurationError` naming `source`, the line and the fault.
    package static func parse(_ text: String, myself: String, source: String = "the cluster configuration")
        throws(ClusterConfigurationError) -> ClusterConfiguration
    {
        var nodes: [ClusterNode] = []
        var owners = [Int16](repeating: -1, count: HashSlot.count)
        // A UTF-8 byte-order mark, as some editors write one, starts the file: it is not part
        // of the first id.
        let text = text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
        // Lines end at LF, CRLF (one `Character`) or any other newline.
        for (offset, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
            .enumerated()
        {
            let lineNumber = offset + 1
            func fault(_ message: String) -> ClusterConfigurationError {
                ClusterConfigurationError(description: "\(source), line \(lineNumber): \(message)")
            }
            let line = rawLine.prefix { $0 != "#" }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard !fields.isEmpty else { continue }
            guard fields.count >= 3 else {
                throw fault("expected ID HOST:PORT SLOTS..., got '\(QuotedText.excerpt(line))'")
            }
            let id = fields[0]
            guard isValidID(id) else {
                throw fault("the id '\(QuotedText.excerpt(id))' is not 1 to 40 letters, digits, '-', '_' or '.'")
            }
            guard !nodes.contains(where: { $0.id == id }) else { throw fault("the id '\(id)' is listed twice") }
            guard let colon = fields[1].lastIndex(of: ":"),
                let port = portNumber(fields[1][fields[1].index(after: colon)...]),
                colon != fields[1].startIndex
            else {
                throw fault("expected HOST:PORT with a port in 1...65535, got '\(QuotedText.excerpt(fields[1]))'")
            }
            var host = String(fields[1][..<colon])
            if host.hasPrefix("[") || host.hasSuffix("]") {
                guard host.count > 2, host.hasPrefix("["), host.hasSuffix("]"),
                    isIPv6Literal(host.dropFirst().dropLast())
                else {
                    throw fault(
                        "expected an IPv6 address in brackets, [ADDRESS]:PORT, got '\(QuotedText.excerpt(fields[1]))'")
                }
                host = String(host.dropFirst().dropLast())
            } else {
                guard isHostName(host) else {
                    throw fault(
                        "the host '\(QuotedText.excerpt(host))' is not an IPv4 address or a host name (letters, digits, '-' and '.'; an IPv6 address goes in brackets)"
                    )
                }
            }
            guard !nodes.contains(where: { $0.host == host && $0.port == port }) else {
                throw fault("the address \(fields[1]) is listed twice")
            }
            guard nodes.count < maxNodes else { throw fault("more than \(maxNodes) nodes") }
            var ranges: [ClosedRange<Int>] = []
            for field in fields[2...] {
                guard let range = slotRange(field) else {
                    throw fault(
                        "expected a slot or FIRST-LAST in 0...\(HashSlot.count - 1), got '\(QuotedText.excerpt(field))'"
                    )
                }
                for slot in range where owners[slot] >= 0 {
                    // This line's own earlier ranges are marked with the index it is about to get.
                    let owner = Int(owners[slot])
                    throw fault("slot \(slot) is already served by '\(owner == nodes.count ? id : nodes[owner].id)'")
                }
                for slot in range { owners[slot] = Int16(nodes.count) }
                ranges.append(range)
            }
            nodes.append(ClusterNode(id: id, host: host, port: port, slotRanges: ranges))
        }
        guard !nodes.isEmpty else { throw ClusterConfigurationError(description: "\(source) lists no node") }
        guard let myIndex = nodes.firstIndex(where: { $0.id == myself }) else {
            throw ClusterConfigurationError(
                description: "\(source) has no node '\(QuotedText.excerpt(myself))' (--cluster-node)")
        }
        return ClusterConfiguration(nodes: nodes, myIndex: myIndex, owners: owners, servingUntil: nil)
    }

    /// The cluster as etcd describes it now (`--etcd`): `members` (id, host, port; this node
    /// among them, or added), each block's owner id (nil: nobody's, or not served here yet),
    /// and this node's fence.
    package init(
        members: [(id: String, host: String, port: Int)], blockOwners: [String?], myself: ClusterNode,
        servingUntil: UInt64, claimRevisions: [Int64] = []
    ) {
        self.claimRevisions = claimRevisions
        var list = members.sorted { $0.id < $1.id }
        if !list.contains(where: { $0.id == myself.id }) {
            list.append((myself.id, myself.host, myself.port))
            list.sort { $0.id < $1.id }
        }
        let index = Dictionary(uniqueKeysWithValues: list.enumerated().map { ($1.id, $0) })
        var owners = [Int16](repeating: -1, count: HashSlot.count)
        var ranges = [[ClosedRange<Int>]](repeating: [], count: list.count)
        for (block, owner) in blockOwners.enumerated() {
            guard let owner, let node = index[owner] else { continue }
            let slots = SlotBlocks.slots(ofBlock: block)
            for slot in slots { owners[slot] = Int16(node) }
            if let last = ranges[node].last, last.upperBound + 1 == slots.lowerBound {
                ranges[node][ranges[node].count - 1] = last.lowerBound...slots.upperBound
            } else {
                ranges[node].append(slots)
            }
        }
        nodes = list.enumerated().map { ClusterNode(id: $1.id, host: $1.host, port: $1.port, slotRanges: ranges[$0]) }
        myIndex = index[myself.id]!
        self.owners = owners
        self.servingUntil = servingUntil
    }

    /// Whether `id` is 1 to 40 letters, digits, `-`, `_` or `.`.
    package static func isValidID(_ id: String) -> Bool {
        (1...40).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
            }
    }

    /// A port written as 1 to 5 ASCII digits, in 1...65535 (no sign, no spaces); nil otherwise.
    private static func portNumber(_ text: Substring) -> Int? {
        guard (1...5).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let port = Int(text), (1...65_535).contains(port)
        else { return nil }
        return port
    }

    /// A host name or IPv4 address as a client can use it: labels of ASCII letters, digits and
    /// '-' (not at either end), joined by single dots, 253 bytes at most.
    private static func isHostName(_ host: String) -> Bool {
        guard (1...253).contains(host.utf8.count) else { return false }
        return host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { byte in
                    (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                        || byte == UInt8(ascii: "-")
                }
        }
    }

    /// An IPv6 address as `inet_pton` reads one (the brackets removed).
    private static func isIPv6Literal(_ address: Substring) -> Bool {
        var parsed = in6_addr()
        return inet_pton(AF_INET6, String(address), &parsed) == 1
    }

    /// `N` or `FIRST-LAST` (FIRST ≤ LAST), within the slots; nil otherwise.
    private static func slotRange(_ field: String) -> ClosedRange<Int>? {
        let bounds = field.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let first = Int(bounds[0]), let last = Int(bounds.last!), first <= last, last < HashSlot.count
        else { return nil }
        return first...last
    }
}
