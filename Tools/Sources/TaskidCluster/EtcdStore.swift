#if Etcd
    /// A key as etcd holds it: its value, the lease it is bound to ("" for none) and the revision
    /// that last changed it. A value type; any thread.
    package struct EtcdKeyValue: Sendable, Equatable {
        package let key: String
        package let value: String
        package var lease = ""
        package var revision: Int64 = 0

        /// A key with its value, lease and revision.
        package init(key: String, value: String, lease: String = "", revision: Int64 = 0) {
            self.key = key
            self.value = value
            self.lease = lease
            self.revision = revision
        }
    }

    /// One change a watch reports: a key set to a value, or deleted (its lease expired, or it
    /// was released) at `revision`. A value type; any thread.
    package enum EtcdChange: Sendable, Equatable {
        case put(EtcdKeyValue)
        case delete(key: String, revision: Int64)
    }

    /// The answer to a transaction: whether its comparisons held (and its writes were made),
    /// and etcd's revision after it (the writes' own revision when they were made). Any thread.
    package struct EtcdTransactionResult: Sendable, Equatable {
        package let succeeded: Bool
        package let revision: Int64

        /// A transaction's answer.
        package init(succeeded: Bool, revision: Int64) {
            self.succeeded = succeeded
            self.revision = revision
        }
    }

    /// The few etcd v3 operations slot ownership needs: leases, the node's registration, a
    /// block's claim and release (each one transaction), a prefix read and a watch. `EtcdClient`
    /// speaks them to etcd; the tests' in-memory store keeps revisions and leases the same way.
    /// Any task may call them; they throw for a call etcd did not answer (or answered with an
    /// error), never for a comparison that failed.
    package protocol EtcdStore: Sendable {
        /// Grants a lease of `seconds`: its id and the time to live granted.
        func grantLease(seconds: Int) async throws -> (id: String, ttl: Int)
        /// Keeps lease `id` alive: the time to live left, 0 when it has expired.
        func keepAlive(_ id: String) async throws -> Int
        /// Revokes lease `id`, deleting every key bound to it.
        func revoke(_ id: String) async throws
        /// `key` with its value, lease and revision; nil when it does not exist.
        func value(of key: String) async throws -> EtcdKeyValue?
        /// Sets `key` to `value` on `lease` only if the key does not exist.
        func createIfAbsent(_ key: String, value: String, lease: String) async throws -> EtcdTransactionResult
        /// Claims a block: sets `key` to `value` on `lease` if it does not exist, and `claimsKey` to
        /// `claimant` (no lease: it outlives the claim). With `ifLastClaimant`, only if
        /// `claimsKey` still holds that claimant.
        func claim(
            _ key: String, value: String, lease: String, claimsKey: String, claimant: String, ifLastClaimant: String?
        ) async throws -> EtcdTransactionResult
        /// Gives a block back: deletes `key` if it holds `value` on `lease` (this very claim, not
        /// a later one of the same id), and `claimsKey` with it.
        func release(_ key: String, value: String, lease: String, claimsKey: String) async throws
            -> EtcdTransactionResult
        /// Every key under `prefix`, and the revision they were read at.
        func read(prefix: String) async throws -> (revision: Int64, values: [EtcdKeyValue])
        /// The changes under `prefix` after `revision`, batch by batch, until etcd ends the watch
        /// (it throws then) or the task is cancelled.
        func watch(prefix: String, after revision: Int64) async throws -> AsyncThrowingStream<[EtcdChange], any Error>
    }
#endif
