#if Etcd
    import AsyncHTTPClient
    import Foundation
    import NIOCore

    /// The few etcd v3 calls slot ownership needs, through etcd's JSON gateway (`/v3/…`, the
    /// same API as its gRPC one, keys and values base64 in JSON) over AsyncHTTPClient: leases
    /// (grant, keep-alive, revoke), a compare-and-swap claim and release, a prefix read, and a
    /// watch. Endpoints are tried in order until one answers.
    ///
    /// `Sendable`: immutable; the HTTP client is thread-safe. Any task.
    package struct EtcdClient: Sendable {
        /// The etcd members' base URLs, `http://host:port`.
        let endpoints: [String]
        let http: HTTPClient
        /// How long one call may take.
        let timeout: TimeAmount

        /// A key, its value, the lease it is bound to ("" for none) and the revision that last
        /// changed it, as etcd holds them.
        package struct KeyValue: Sendable, Equatable {
            let key: String
            let value: String
            var lease = ""
            var revision: Int64 = 0
        }

        /// One change a watch reports: a key set to a value, or deleted (its lease expired,
        /// or it was released) at `revision`.
        package enum Change: Sendable, Equatable {
            case put(KeyValue)
            case delete(key: String, revision: Int64)
        }

        /// An etcd call that failed: no endpoint answered, or one answered with an error.
        package struct Failure: Error, CustomStringConvertible {
            package let description: String
        }

        /// The value of `key`, with its lease and revision; nil when it does not exist.
        func value(of key: String) async throws -> KeyValue? {
            let reply = try await call("/v3/kv/range", ["key": Self.encode(key)])
            guard let entry = (reply["kvs"] as? [[String: Any]])?.first else { return nil }
            return KeyValue(
                key: key, value: Self.decode(entry["value"]) ?? "", lease: entry["lease"] as? String ?? "",
                revision: Int64(entry["mod_revision"] as? String ?? "") ?? 0)
        }

        /// Grants a lease of `seconds`; returns its id and the time to live etcd granted.
        func grantLease(seconds: Int) async throws -> (id: String, ttl: Int) {
            let reply = try await call("/v3/lease/grant", ["TTL": seconds])
            guard let id = reply["ID"] as? String, let ttl = Int(reply["TTL"] as? String ?? "") else {
                throw Failure(description: "etcd granted no lease: \(reply)")
            }
            return (id, ttl)
        }

        /// Keeps lease `id` alive; returns the time to live left, 0 when it has expired.
        /// - Throws: `Failure` for a reply that says neither (no `result`).
        func keepAlive(_ id: String) async throws -> Int {
            let reply = try await call("/v3/lease/keepalive", ["ID": id])
            guard let result = reply["result"] as? [String: Any] else {
                throw Failure(description: "a keep-alive answered without a result: \(reply)")
            }
            // etcd leaves out a TTL of 0: the lease has expired.
            return Int(result["TTL"] as? String ?? "0") ?? 0
        }

        /// Revokes lease `id`: every key bound to it is deleted at once.
        func revoke(_ id: String) async throws {
            _ = try await call("/v3/lease/revoke", ["ID": id])
        }

        /// Sets `key` to `value`, bound to `lease`, only if the key does not exist; whether it
        /// did (the compare-and-swap that makes a claim exclusive), and the revision etcd was at
        /// after it (the claim's own revision when it did).
        func createIfAbsent(_ key: String, value: String, lease: String) async throws -> (
            succeeded: Bool, revision: Int64
        ) {
            let reply = try await call(
                "/v3/kv/txn",
                [
                    "compare": [["key": Self.encode(key), "target": "CREATE", "create_revision": "0"]],
                    "success": [
                        ["request_put": ["key": Self.encode(key), "value": Self.encode(value), "lease": lease]]
                    ],
                ])
            return (reply["succeeded"] as? Bool ?? false, Self.revision(of: reply))
        }

        /// Claims a slot block: sets `key` to `value`, bound to `lease`, only if the key does not
        /// exist, and records `claimant` (the node and its process) in `claimsKey`, a key with
        /// no lease that outlives the claim. With `ifLastClaimant`, only if `claimsKey` still
        /// names that claimant: nobody claimed the block since (a sticky claim). Whether it did,
        /// and the revision etcd was at after it (the claim's own when it did).
        func claim(
            _ key: String, value: String, lease: String, claimsKey: String, claimant: String,
            ifLastClaimant: String? = nil
        ) async throws -> (succeeded: Bool, revision: Int64) {
            var compare: [[String: Any]] = [["key": Self.encode(key), "target": "CREATE", "create_revision": "0"]]
            if let ifLastClaimant {
                compare.append(["key": Self.encode(claimsKey), "target": "VALUE", "value": Self.encode(ifLastClaimant)])
            }
            let reply = try await call(
                "/v3/kv/txn",
                [
                    "compare": compare,
                    "success": [
                        ["request_put": ["key": Self.encode(key), "value": Self.encode(value), "lease": lease]],
                        ["request_put": ["key": Self.encode(claimsKey), "value": Self.encode(claimant)]],
                    ],
                ])
            return (reply["succeeded"] as? Bool ?? false, Self.revision(of: reply))
        }

        /// Gives a slot block back: deletes `key` only if it holds `value`, and `claimsKey` with
        /// it (a block given back has no claimant to wait for). Whether it did, and the revision
        /// etcd was at after it.
        func release(_ key: String, value: String, claimsKey: String) async throws -> (
            succeeded: Bool, revision: Int64
        ) {
            let reply = try await call(
                "/v3/kv/txn",
                [
                    "compare": [["key": Self.encode(key), "target": "VALUE", "value": Self.encode(value)]],
                    "success": [
                        ["request_delete_range": ["key": Self.encode(key)]],
                        ["request_delete_range": ["key": Self.encode(claimsKey)]],
                    ],
                ])
            return (reply["succeeded"] as? Bool ?? false, Self.revision(of: reply))
        }

        /// Every key under `prefix` with its value, and the revision they were read at.
        func read(prefix: String) async throws -> (revision: Int64, values: [KeyValue]) {
            let reply = try await call(
                "/v3/kv/range", ["key": Self.encode(prefix), "range_end": Self.encode(Self.rangeEnd(of: prefix))])
            let values = (reply["kvs"] as? [[String: Any]] ?? []).compactMap { entry -> KeyValue? in
                guard let key = Self.decode(entry["key"]) else { return nil }
                return KeyValue(
                    key: key, value: Self.decode(entry["value"]) ?? "", lease: entry["lease"] as? String ?? "",
                    revision: Int64(entry["mod_revision"] as? String ?? "") ?? 0)
            }
            return (Self.revision(of: reply), values)
        }

        /// The changes under `prefix` after `revision`, as etcd reports them, until the stream
        /// ends (etcd went away) or the task is cancelled. Reads from the first endpoint that
        /// answers.
        func watch(prefix: String, after revision: Int64) async throws -> AsyncThrowingStream<[Change], any Error> {
            let body: [String: Any] = [
                "create_request": [
                    "key": Self.encode(prefix), "range_end": Self.encode(Self.rangeEnd(of: prefix)),
                    "start_revision": String(revision + 1),
                ]
            ]
            var lastError: (any Error)?
            for endpoint in endpoints {
                do {
                    var request = HTTPClientRequest(url: endpoint + "/v3/watch")
                    request.method = .POST
                    request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
                    let response = try await http.execute(request, timeout: timeout)
                    guard response.status == .ok else { throw Failure(description: "watch: HTTP \(response.status)") }
                    return AsyncThrowingStream { continuation in
                        let reader = Task {
                            var pending: [UInt8] = []
                            do {
                                for try await chunk in response.body {
                                    pending += chunk.readableBytesView
                                    while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                                        let line = Array(pending[..<newline])
                                        pending.removeSubrange(...newline)
                                        let changes = try Self.changes(inWatchLine: line)
                                        if !changes.isEmpty { continuation.yield(changes) }
                                    }
                                }
                                continuation.finish()
                            } catch {
                                continuation.finish(throwing: error)
                            }
                        }
                        continuation.onTermination = { _ in reader.cancel() }
                    }
                } catch {
                    lastError = error
                }
            }
            throw Failure(
                description: "no etcd endpoint answered the watch: \(lastError.map { "\($0)" } ?? "none given")")
        }

        // MARK: - The JSON gateway

        /// POSTs `body` as JSON to `path` on the first endpoint that answers; its JSON reply.
        /// - Throws: `Failure` with each endpoint's reason: it did not answer, answered with
        ///   etcd's error, or answered, but not as etcd does.
        private func call(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
            let data = try JSONSerialization.data(withJSONObject: body)
            var reasons: [String] = []
            for endpoint in endpoints {
                do {
                    return try await call(endpoint, path, data)
                } catch let failure as Failure {
                    // Also an error answer: a member cut off from its cluster answers 503, another
                    // member may not.
                    reasons.append(failure.description)
                } catch {
                    reasons.append(Self.failure(of: error, at: endpoint).description)
                }
            }
            throw Failure(description: reasons.isEmpty ? "no etcd endpoint given" : reasons.joined(separator: "; "))
        }

        /// One endpoint's JSON reply to `path`.
        private func call(_ endpoint: String, _ path: String, _ data: Data) async throws -> [String: Any] {
            var request = HTTPClientRequest(url: endpoint + path)
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: data))
            let response = try await http.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: 4 << 20)
            let text = String(buffer: bytes)
            // A streaming call (keep-alive) answers one JSON line.
            let first = text.split(separator: "\n").first.map(String.init) ?? ""
            guard let reply = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any] else {
                throw Failure(
                    description: "\(Self.host(of: endpoint)) answered, but not as etcd: HTTP \(response.status.code) "
                        + "with \(first.isEmpty ? "no body" : "'\(QuotedText.excerpt(first))'") to \(path)")
            }
            guard response.status == .ok else {
                throw Failure(description: "\(path): HTTP \(response.status.code): \(reply["message"] ?? first)")
            }
            return reply
        }

        /// What went wrong reaching `endpoint`: down (refused, timed out) or, once connected, not
        /// speaking HTTP as etcd does (a redis-server closes the connection at an HTTP request).
        static func failure(of error: any Error, at endpoint: String) -> Failure {
            let host = host(of: endpoint)
            if let client = error as? HTTPClientError, client == .remoteConnectionClosed {
                // redis-server closes the connection at an HTTP request; an etcd going down can
                // close one too, so the message says both.
                return Failure(
                    description: "\(host) answered, but not as etcd: it closed the connection at an HTTP request "
                        + "(an etcd restarting can too)")
            }
            if "\(type(of: error))".contains("HTTPParserError") {
                return Failure(description: "\(host) answered, but not as etcd: not HTTP (\(error))")
            }
            return Failure(description: "etcd at \(host) is not answering: \(error)")
        }

        /// `host:port` of an endpoint URL, for messages.
        static func host(of endpoint: String) -> String {
            endpoint.hasPrefix("http://") ? String(endpoint.dropFirst("http://".count)) : endpoint
        }

        /// The changes one line of a watch stream reports (none for the line that confirms
        /// the watch was made).
        package static func changes(inWatchLine line: [UInt8]) throws -> [Change] {
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let result = object["result"] as? [String: Any]
            else {
                throw Failure(
                    description: "a watch line that is not a result: \(String(decoding: line, as: UTF8.self))")
            }
            if result["canceled"] as? Bool == true {
                throw Failure(description: "etcd cancelled the watch: \(result["cancel_reason"] ?? "no reason given")")
            }
            return (result["events"] as? [[String: Any]] ?? []).compactMap { event in
                guard let kv = event["kv"] as? [String: Any], let key = decode(kv["key"]) else { return nil }
                let revision = Int64(kv["mod_revision"] as? String ?? "") ?? 0
                if event["type"] as? String == "DELETE" { return .delete(key: key, revision: revision) }
                return .put(
                    KeyValue(
                        key: key, value: decode(kv["value"]) ?? "", lease: kv["lease"] as? String ?? "",
                        revision: revision))
            }
        }

        /// The revision in a reply's header (etcd's revision when it answered), 0 if none.
        package static func revision(of reply: [String: Any]) -> Int64 {
            Int64((reply["header"] as? [String: Any])?["revision"] as? String ?? "") ?? 0
        }

        package static func encode(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

        static func decode(_ value: Any?) -> String? {
            guard let text = value as? String, let data = Data(base64Encoded: text) else { return nil }
            return String(decoding: data, as: UTF8.self)
        }

        /// The end of the range of keys starting with `prefix`: its last byte plus one.
        static func rangeEnd(of prefix: String) -> String {
            var bytes = Array(prefix.utf8)
            bytes[bytes.count - 1] += 1
            return String(decoding: bytes, as: UTF8.self)
        }

        /// Each setting as given.
        package init(endpoints: [String], http: HTTPClient, timeout: TimeAmount) {
            self.endpoints = endpoints
            self.http = http
            self.timeout = timeout
        }
    }
#endif
