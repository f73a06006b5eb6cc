#if Etcd
    import Foundation
    import Logging
    import Testing

    @testable import TaskidCluster

    /// `FakeEtcd` as an `EtcdStore`, for the driver (`EtcdOwnership`): each call under a lock,
    /// leases expiring by the monotonic clock, and watches fed as keys change. Unchecked
    /// `Sendable`: every field is reached only under `lock`.
    final class FakeEtcdStore: EtcdStore, @unchecked Sendable {
        private let lock = NSLock()
        private var etcd = FakeEtcd()
        private var watches: [(after: Int64, continuation: AsyncThrowingStream<[EtcdChange], any Error>.Continuation)] =
            []
        /// Every call made, in order ("grant", "claim 3", "release 3", "revoke 7001", …).
        private var calls: [String] = []

        private func locked<Result>(_ name: String, _ body: (inout FakeEtcd, UInt64) throws -> Result) rethrows
            -> Result
        {
            lock.lock()
            defer { lock.unlock() }
            let now = MonotonicClock.nanoseconds()
            etcd.expireLeases(at: now)
            calls.append(name)
            let result = try body(&etcd, now)
            for index in watches.indices {
                let changes = etcd.changes(after: watches[index].after)
                if !changes.isEmpty {
                    watches[index].after = etcd.revision
                    watches[index].continuation.yield(changes)
                }
            }
            return result
        }

        var callLog: [String] { locked("") { _, _ in calls.filter { !$0.isEmpty } } }
        var keys: [String: FakeEtcd.Entry] { locked("") { etcd, _ in etcd.keys } }

        func grantLease(seconds: Int) async throws -> (id: String, ttl: Int) {
            locked("grant") { $0.grantLease(seconds: seconds, at: $1) }
        }
        func keepAlive(_ id: String) async throws -> Int { locked("keepalive") { $0.keepAlive(id, at: $1) } }
        func revoke(_ id: String) async throws { locked("revoke \(id)") { etcd, _ in etcd.revoke(id) } }
        func value(of key: String) async throws -> EtcdKeyValue? { locked("get") { etcd, _ in etcd.value(of: key) } }
        func createIfAbsent(_ key: String, value: String, lease: String) async throws -> EtcdTransactionResult {
            try locked("register") { etcd, _ in try etcd.createIfAbsent(key, value: value, lease: lease) }
        }
        func claim(
            _ key: String, value: String, lease: String, claimsKey: String, claimant: String, ifLastClaimant: String?
        ) async throws -> EtcdTransactionResult {
            try locked("claim") { etcd, _ in
                try etcd.claim(
                    key, value: value, lease: lease, claimsKey: claimsKey, claimant: claimant,
                    ifLastClaimant: ifLastClaimant)
            }
        }
        func release(_ key: String, value: String, lease: String, claimsKey: String) async throws
            -> EtcdTransactionResult
        {
            locked("release") { etcd, _ in etcd.release(key, value: value, lease: lease, claimsKey: claimsKey) }
        }
        func read(prefix: String) async throws -> (revision: Int64, values: [EtcdKeyValue]) {
            locked("read") { etcd, _ in etcd.read(prefix: prefix) }
        }
        func watch(prefix: String, after revision: Int64) async throws -> AsyncThrowingStream<[EtcdChange], any Error> {
            let (stream, continuation) = AsyncThrowingStream.makeStream(of: [EtcdChange].self)
            locked("watch") { etcd, _ in
                let changes = etcd.changes(after: revision)
                if !changes.isEmpty { continuation.yield(changes) }
                watches.append((etcd.revision, continuation))
            }
            return stream
        }
    }

    /// The driver of the ownership (`EtcdOwnership`) on the in-memory store: what it hands the
    /// server, and in which order it tells etcd.
    @Suite("slot ownership: the driver on an in-memory etcd")
    struct EtcdOwnershipDriverTests {
        /// The views the server was handed, in order, each with what the store had been told by then.
        final class Server: @unchecked Sendable {
            // @unchecked Sendable: every field is reached only under `lock`.
            private let lock = NSLock()
            private var views: [(ClusterConfiguration, callsBefore: Int)] = []
            let store: FakeEtcdStore
            init(store: FakeEtcdStore) { self.store = store }

            func take(_ view: ClusterConfiguration) {
                let calls = store.callLog.count
                lock.withLock { views.append((view, calls)) }
            }
            var taken: [(ClusterConfiguration, callsBefore: Int)] { lock.withLock { views } }
        }

        @Test(.timeLimit(.minutes(1))) func aNodeAloneServesEveryBlockAndHandsOverBeforeItsLeaseGoes() async throws {
            let store = FakeEtcdStore()
            let server = Server(store: store)
            let settings = try EtcdSettings(endpoints: "http://127.0.0.1:1", leaseSeconds: 2, clusterName: "sim")
            let me = ClusterNode(id: "n1", host: "127.0.0.1", port: 7001, slotRanges: [])
            let ownership = EtcdOwnership(
                settings: settings, myself: me, store: store,
                logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
                publish: { view, _ in server.take(view) }, dropKeys: { _ in true })
            let running = Task { await ownership.run() }
            while await ownership.readiness() != .ready { try await Task.sleep(for: .milliseconds(5)) }
            let keys = store.keys
            #expect((0..<SlotBlocks.count).allSatisfy { keys["/taskid/sim/blocks/\($0)"]?.value == "n1" })
            #expect(server.taken.last.map { $0.0.unservedSlots.isEmpty } == true)
            await ownership.handOver()
            // The lease was revoked only after the server took a view that serves nothing.
            let log = store.callLog
            // The hand-over's revoke is the last: on a loaded machine the 2 s lease may lapse and
            // be revoked and granted again earlier in the run.
            let revokedAt = try #require(log.lastIndex { $0.hasPrefix("revoke") })
            let views = server.taken
            let lastServing = try #require(views.lastIndex { $0.0.owner(ofSlot: 0) != nil })
            try #require(lastServing + 1 < views.count, "a view that serves nothing came after")
            #expect(views[lastServing + 1].0.owner(ofSlot: 0) == nil)
            #expect(views[lastServing + 1].callsBefore <= revokedAt)
            #expect(store.keys.keys.allSatisfy { !$0.contains("/blocks/") && !$0.contains("/members/") })
            running.cancel()
            await running.value
        }
    }
#endif
