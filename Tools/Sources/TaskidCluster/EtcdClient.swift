#if Etcd
    import AsyncHTTPClient
    import Foundation
    import NIOCore

    /// The few etcd v3 calls slot ownership needs (`EtcdStore`), through etcd's JSON gateway
    /// (`/v3/…`, the same API as its gRPC one, keys and values base64 in JSON, typed here as
    /// `Codable` messages: `EtcdMessages.swift`) over AsyncHTTPClient. Endpoints are tried in
    /// order until one answers.
    ///
    /// `Sendable`: immutable; the HTTP client is thread-safe. Any task.
    package struct EtcdClient: EtcdStore {
        /// The etcd members' base URLs, `http://host:port`.
        let endpoints: [String]
        let http: HTTPClient
        /// How long one call may take.
        let timeout: TimeAmount

        /// A client of the etcd members at `endpoints`, each call bounded by `timeout`.
        package init(endpoints: [String], http: HTTPClient, timeout: TimeAmount) {
            self.endpoints = endpoints
            self.http = http
            self.timeout = timeout
        }

        /// An etcd call that failed: no endpoint answered, or one answered with an error.
        package struct Failure: Error, CustomStringConvertible {
            package let description: String
        }

        package func value(of key: String) async throws -> EtcdKeyValue? {
            let reply: EtcdRangeReply = try await call("/v3/kv/range", EtcdRangeRequest(key: key))
            return reply.kvs?.first.flatMap { $0.keyValue }
        }

        package func grantLease(seconds: Int) async throws -> (id: String, ttl: Int) {
            let reply: EtcdLeaseGrantReply = try await call("/v3/lease/grant", EtcdLeaseGrantRequest(ttl: seconds))
            guard let id = reply.id, let ttl = reply.ttl.flatMap({ Int($0) }) else {
                throw Failure(description: "etcd granted no lease")
            }
            return (id, ttl)
        }

        /// - Throws: `Failure` for a reply that says neither alive nor expired (no `result`).
        package func keepAlive(_ id: String) async throws -> Int {
            let reply: EtcdLeaseKeepAliveReply = try await call("/v3/lease/keepalive", EtcdLeaseRequest(id: id))
            guard let result = reply.result else {
                throw Failure(description: "a keep-alive answered without a result")
            }
            // etcd leaves out a TTL of 0: the lease has expired.
            return Int(result.ttl ?? "0") ?? 0
        }

        package func revoke(_ id: String) async throws {
            let _: EtcdHeaderReply = try await call("/v3/lease/revoke", EtcdLeaseRequest(id: id))
        }

        package func createIfAbsent(_ key: String, value: String, lease: String) async throws -> EtcdTransactionResult {
            try await transaction(
                EtcdTransaction(
                    compare: [.absent(key)], success: [.put(key, value: value, lease: lease)]))
        }

        package func claim(
            _ key: String, value: String, lease: String, claimsKey: String, claimant: String,
            ifLastClaimant: String? = nil
        ) async throws -> EtcdTransactionResult {
            var compare = [EtcdCompare.absent(key)]
            if let ifLastClaimant { compare.append(.holds(claimsKey, ifLastClaimant)) }
            return try await transaction(
                EtcdTransaction(
                    compare: compare,
                    success: [.put(key, value: value, lease: lease), .put(claimsKey, value: claimant, lease: nil)]))
        }

        package func release(_ key: String, value: String, lease: String, claimsKey: String) async throws
            -> EtcdTransactionResult
        {
            try await transaction(
                EtcdTransaction(
                    compare: [.holds(key, value), .onLease(key, lease)], success: [.delete(key), .delete(claimsKey)]))
        }

        private func transaction(_ transaction: EtcdTransaction) async throws -> EtcdTransactionResult {
            let reply: EtcdTransactionReply = try await call("/v3/kv/txn", transaction)
            // etcd leaves out `succeeded` when it is false.
            return EtcdTransactionResult(
                succeeded: reply.succeeded ?? false, revision: reply.header?.revisionNumber ?? 0)
        }

        package func read(prefix: String) async throws -> (revision: Int64, values: [EtcdKeyValue]) {
            let reply: EtcdRangeReply = try await call("/v3/kv/range", EtcdRangeRequest(prefix: prefix))
            return (reply.header?.revisionNumber ?? 0, (reply.kvs ?? []).compactMap(\.keyValue))
        }

        /// Reads from the first endpoint that answers.
        package func watch(prefix: String, after revision: Int64) async throws -> AsyncThrowingStream<
            [EtcdChange], any Error
        > {
            let body = try JSONEncoder().encode(EtcdWatchRequest(prefix: prefix, after: revision))
            var lastError: (any Error)?
            for endpoint in endpoints {
                do {
                    var request = HTTPClientRequest(url: endpoint + "/v3/watch")
                    request.method = .POST
                    request.body = .bytes(ByteBuffer(bytes: body))
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

        /// POSTs `body` as JSON to `path` on the first endpoint that answers; its reply.
        /// - Throws: `Failure` with each endpoint's reason: it did not answer, answered with
        ///   etcd's error, or answered, but not as etcd does.
        private func call<Reply: Decodable>(_ path: String, _ body: some Encodable) async throws -> Reply {
            let data = try JSONEncoder().encode(body)
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

        /// One endpoint's reply to `path`.
        private func call<Reply: Decodable>(_ endpoint: String, _ path: String, _ data: Data) async throws -> Reply {
            var request = HTTPClientRequest(url: endpoint + path)
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: data))
            let response = try await http.execute(request, timeout: timeout)
            let bytes = try await response.body.collect(upTo: 4 << 20)
            let text = String(buffer: bytes)
            // A streaming call (keep-alive) answers one JSON line.
            let first = text.split(separator: "\n").first.map(String.init) ?? ""
            let notEtcd = Failure(
                description: "\(Self.host(of: endpoint)) answered, but not as etcd: HTTP \(response.status.code) "
                    + "with \(first.isEmpty ? "no body" : "'\(QuotedText.excerpt(first))'") to \(path)")
            guard response.status == .ok else {
                guard let error = try? JSONDecoder().decode(EtcdErrorReply.self, from: Data(first.utf8)),
                    let message = error.message ?? error.error
                else { throw notEtcd }
                throw Failure(description: "\(path): HTTP \(response.status.code): \(message)")
            }
            // etcd's every reply is a JSON object with a header (a keep-alive's, in its result).
            guard let envelope = try? JSONDecoder().decode(EtcdEnvelope.self, from: Data(first.utf8)),
                envelope.header != nil || envelope.result != nil,
                let reply = try? JSONDecoder().decode(Reply.self, from: Data(first.utf8))
            else { throw notEtcd }
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
        static func changes(inWatchLine line: [UInt8]) throws -> [EtcdChange] {
            guard let message = try? JSONDecoder().decode(EtcdWatchLine.self, from: Data(line)),
                let result = message.result
            else {
                throw Failure(
                    description: "a watch line that is not a result: \(String(decoding: line, as: UTF8.self))")
            }
            if result.canceled == true {
                throw Failure(description: "etcd cancelled the watch: \(result.cancelReason ?? "no reason given")")
            }
            return (result.events ?? []).compactMap { event in
                guard let kv = event.kv, let key = kv.key.flatMap(EtcdBase64.decode) else { return nil }
                let revision = kv.modRevision.flatMap { Int64($0) } ?? 0
                // etcd leaves out the type PUT (its enum's zero).
                if event.type == "DELETE" { return .delete(key: key, revision: revision) }
                return .put(
                    EtcdKeyValue(
                        key: key, value: kv.value.flatMap(EtcdBase64.decode) ?? "", lease: kv.lease ?? "",
                        revision: revision))
            }
        }

    }
#endif
