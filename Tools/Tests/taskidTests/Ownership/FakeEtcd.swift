#if Etcd
    @testable import TaskidCluster

    /// An in-memory etcd for the ownership tests: keys with their create and mod revisions, one
    /// revision counter, leases that expire at their time by the caller's clock (deleting their
    /// keys, each deletion a revision of its own, as etcd does), and the history of changes a
    /// watch reads from. Synchronous: the simulation (`OwnershipSimulation`) decides when a call
    /// reaches it. Test thread only.
    struct FakeEtcd {
        struct Entry {
            var value: String
            var lease: String
            var createRevision: Int64
            var modRevision: Int64
        }

        struct Lease {
            var ttl: Int
            var expiresAt: UInt64
        }

        /// A call etcd refuses (a lease that does not exist), as the gateway answers it.
        struct Refusal: Error, CustomStringConvertible {
            let description: String
        }

        private(set) var revision: Int64 = 1
        private(set) var keys: [String: Entry] = [:]
        private(set) var leases: [String: Lease] = [:]
        private var nextLease = 7_000
        /// Every change, in order, with its revision.
        private(set) var history: [EtcdChange] = []

        mutating func grantLease(seconds: Int, at now: UInt64) -> (id: String, ttl: Int) {
            nextLease += 1
            let id = String(nextLease)
            leases[id] = Lease(ttl: seconds, expiresAt: now + UInt64(seconds) * 1_000_000_000)
            return (id, seconds)
        }

        /// The time to live left, 0 for a lease that has expired or never was.
        mutating func keepAlive(_ id: String, at now: UInt64) -> Int {
            guard var lease = leases[id] else { return 0 }
            lease.expiresAt = now + UInt64(lease.ttl) * 1_000_000_000
            leases[id] = lease
            return lease.ttl
        }

        mutating func revoke(_ id: String) {
            guard leases.removeValue(forKey: id) != nil else { return }
            for (key, entry) in keys.sorted(by: { $0.key < $1.key }) where entry.lease == id { delete(key) }
        }

        /// Deletes the keys of every lease whose time has passed at `now`.
        mutating func expireLeases(at now: UInt64) {
            guard leases.values.contains(where: { $0.expiresAt <= now }) else { return }
            for (id, lease) in leases.sorted(by: { $0.key < $1.key }) where lease.expiresAt <= now { revoke(id) }
        }

        /// etcd restarted: every lease gets its whole time to live again (etcd's leader renews
        /// them when it takes over, so that a restart expires none).
        mutating func restart(at now: UInt64) {
            for id in leases.keys { leases[id]!.expiresAt = now + UInt64(leases[id]!.ttl) * 1_000_000_000 }
        }

        /// Whether lease `id` is alive at `now`.
        func isAlive(_ id: String, at now: UInt64) -> Bool {
            leases[id].map { $0.expiresAt > now } ?? false
        }

        func value(of key: String) -> EtcdKeyValue? {
            keys[key].map { EtcdKeyValue(key: key, value: $0.value, lease: $0.lease, revision: $0.modRevision) }
        }

        mutating func createIfAbsent(_ key: String, value: String, lease: String) throws -> EtcdTransactionResult {
            try checkLease(lease)
            guard keys[key] == nil else { return EtcdTransactionResult(succeeded: false, revision: revision) }
            put(key, value, lease: lease)
            return EtcdTransactionResult(succeeded: true, revision: revision)
        }

        mutating func claim(
            _ key: String, value: String, lease: String, claimsKey: String, claimant: String, ifLastClaimant: String?
        ) throws -> EtcdTransactionResult {
            try checkLease(lease)
            guard keys[key] == nil, ifLastClaimant == nil || keys[claimsKey]?.value == ifLastClaimant else {
                return EtcdTransactionResult(succeeded: false, revision: revision)
            }
            // One transaction, one revision for both writes.
            revision += 1
            for (name, text, on) in [(key, value, lease), (claimsKey, claimant, "")] {
                keys[name] = Entry(value: text, lease: on, createRevision: revision, modRevision: revision)
                history.append(.put(EtcdKeyValue(key: name, value: text, lease: on, revision: revision)))
            }
            return EtcdTransactionResult(succeeded: true, revision: revision)
        }

        mutating func release(_ key: String, value: String, lease: String, claimsKey: String) -> EtcdTransactionResult {
            guard keys[key]?.value == value, keys[key]?.lease == lease else {
                return EtcdTransactionResult(succeeded: false, revision: revision)
            }
            revision += 1
            for name in [key, claimsKey] where keys.removeValue(forKey: name) != nil {
                history.append(.delete(key: name, revision: revision))
            }
            return EtcdTransactionResult(succeeded: true, revision: revision)
        }

        func read(prefix: String) -> (revision: Int64, values: [EtcdKeyValue]) {
            let values = keys.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }.map {
                EtcdKeyValue(key: $0.key, value: $0.value.value, lease: $0.value.lease, revision: $0.value.modRevision)
            }
            return (revision, values)
        }

        /// The changes made after `revision`.
        func changes(after revision: Int64) -> [EtcdChange] {
            // The history is in revision order: the first change after `revision`, by halves.
            var low = 0
            var high = history.count
            while low < high {
                let middle = (low + high) / 2
                if history[middle].revision > revision { high = middle } else { low = middle + 1 }
            }
            return Array(history[low...])
        }

        private func checkLease(_ lease: String) throws {
            guard leases[lease] != nil else { throw Refusal(description: "etcdserver: requested lease not found") }
        }

        private mutating func put(_ key: String, _ value: String, lease: String) {
            revision += 1
            keys[key] = Entry(value: value, lease: lease, createRevision: revision, modRevision: revision)
            history.append(.put(EtcdKeyValue(key: key, value: value, lease: lease, revision: revision)))
        }

        private mutating func delete(_ key: String) {
            guard keys.removeValue(forKey: key) != nil else { return }
            revision += 1
            history.append(.delete(key: key, revision: revision))
        }
    }

    extension EtcdChange {
        /// The revision the change was made at.
        var revision: Int64 {
            switch self {
            case .put(let entry): entry.revision
            case .delete(_, let revision): revision
            }
        }
    }
#endif
