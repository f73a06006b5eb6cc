#if Etcd
    import Foundation

    // etcd v3's JSON gateway messages, as far as `EtcdClient` uses them. The gateway writes
    // int64 fields as strings, leaves out fields at their zero value (`succeeded: false`, a PUT
    // event's type, an expired lease's TTL), and carries keys and values in base64.

    /// Keys and values in base64, as the gateway carries them. Any thread.
    enum EtcdBase64 {
        static func encode(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

        static func decode(_ text: String) -> String? {
            Data(base64Encoded: text).map { String(decoding: $0, as: UTF8.self) }
        }

        /// The end of the range of keys starting with `prefix` (its last byte plus one), encoded.
        static func rangeEnd(of prefix: String) -> String {
            var bytes = Array(prefix.utf8)
            bytes[bytes.count - 1] += 1
            return Data(bytes).base64EncodedString()
        }
    }

    struct EtcdResponseHeader: Decodable {
        var revision: String?
        var revisionNumber: Int64? { revision.flatMap { Int64($0) } }
    }

    /// Any reply: what tells etcd's answers from another server's JSON.
    struct EtcdEnvelope: Decodable {
        var header: EtcdResponseHeader?
        var result: EtcdLeaseKeepAliveReply.Result?
    }

    /// An error answer: `{"error": "…", "message": "…"}`, or, from a streaming call such as a
    /// keep-alive, `{"error": {"message": "…", …}}`.
    struct EtcdErrorReply: Decodable {
        var error: String?
        var message: String?

        enum CodingKeys: String, CodingKey { case error, message }
        struct Nested: Decodable { var message: String? }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            message = try container.decodeIfPresent(String.self, forKey: .message)
            if let text = try? container.decodeIfPresent(String.self, forKey: .error) {
                error = text
            } else {
                error = (try? container.decodeIfPresent(Nested.self, forKey: .error))?.message
            }
        }
    }

    struct EtcdHeaderReply: Decodable {
        var header: EtcdResponseHeader?
    }

    struct EtcdStoredKeyValue: Decodable {
        var key: String?
        var value: String?
        var lease: String?
        var modRevision: String?

        enum CodingKeys: String, CodingKey {
            case key, value, lease
            case modRevision = "mod_revision"
        }

        var keyValue: EtcdKeyValue? {
            guard let key = key.flatMap(EtcdBase64.decode) else { return nil }
            return EtcdKeyValue(
                key: key, value: value.flatMap(EtcdBase64.decode) ?? "", lease: lease ?? "",
                revision: modRevision.flatMap { Int64($0) } ?? 0)
        }
    }

    struct EtcdRangeRequest: Encodable {
        var key: String
        var rangeEnd: String?

        enum CodingKeys: String, CodingKey {
            case key
            case rangeEnd = "range_end"
        }

        /// One key.
        init(key: String) { self.key = EtcdBase64.encode(key) }

        /// Every key under `prefix`.
        init(prefix: String) {
            key = EtcdBase64.encode(prefix)
            rangeEnd = EtcdBase64.rangeEnd(of: prefix)
        }
    }

    struct EtcdRangeReply: Decodable {
        var header: EtcdResponseHeader?
        var kvs: [EtcdStoredKeyValue]?
    }

    struct EtcdLeaseGrantRequest: Encodable {
        var ttl: Int
        enum CodingKeys: String, CodingKey { case ttl = "TTL" }
    }

    struct EtcdLeaseGrantReply: Decodable {
        var id: String?
        var ttl: String?
        enum CodingKeys: String, CodingKey {
            case id = "ID"
            case ttl = "TTL"
        }
    }

    /// A keep-alive or a revocation of lease `id`.
    struct EtcdLeaseRequest: Encodable {
        var id: String
        enum CodingKeys: String, CodingKey { case id = "ID" }
    }

    struct EtcdLeaseKeepAliveReply: Decodable {
        struct Result: Decodable {
            var ttl: String?
            enum CodingKeys: String, CodingKey { case ttl = "TTL" }
        }
        var result: Result?
    }

    /// A comparison of a transaction: a key that does not exist, holds a value, or is bound to
    /// a lease.
    struct EtcdCompare: Encodable {
        var key: String
        var target: String
        var createRevision: String?
        var value: String?
        var lease: String?

        enum CodingKeys: String, CodingKey {
            case key, target, value, lease
            case createRevision = "create_revision"
        }

        static func onLease(_ key: String, _ lease: String) -> EtcdCompare {
            EtcdCompare(key: EtcdBase64.encode(key), target: "LEASE", lease: lease)
        }

        static func absent(_ key: String) -> EtcdCompare {
            EtcdCompare(key: EtcdBase64.encode(key), target: "CREATE", createRevision: "0")
        }

        static func holds(_ key: String, _ value: String) -> EtcdCompare {
            EtcdCompare(key: EtcdBase64.encode(key), target: "VALUE", value: EtcdBase64.encode(value))
        }
    }

    /// A write of a transaction: a put (on a lease, or none) or a delete.
    struct EtcdRequestOperation: Encodable {
        struct Put: Encodable {
            var key: String
            var value: String
            var lease: String?
        }
        struct Delete: Encodable {
            var key: String
        }
        var put: Put?
        var delete: Delete?

        enum CodingKeys: String, CodingKey {
            case put = "request_put"
            case delete = "request_delete_range"
        }

        static func put(_ key: String, value: String, lease: String?) -> EtcdRequestOperation {
            EtcdRequestOperation(
                put: Put(key: EtcdBase64.encode(key), value: EtcdBase64.encode(value), lease: lease))
        }

        static func delete(_ key: String) -> EtcdRequestOperation {
            EtcdRequestOperation(delete: Delete(key: EtcdBase64.encode(key)))
        }
    }

    struct EtcdTransaction: Encodable {
        var compare: [EtcdCompare]
        var success: [EtcdRequestOperation]
    }

    struct EtcdTransactionReply: Decodable {
        var header: EtcdResponseHeader?
        var succeeded: Bool?
    }

    struct EtcdWatchRequest: Encodable {
        struct Create: Encodable {
            var key: String
            var rangeEnd: String
            var startRevision: String
            enum CodingKeys: String, CodingKey {
                case key
                case rangeEnd = "range_end"
                case startRevision = "start_revision"
            }
        }
        var create: Create
        enum CodingKeys: String, CodingKey { case create = "create_request" }

        /// Every change under `prefix` after `revision`.
        init(prefix: String, after revision: Int64) {
            create = Create(
                key: EtcdBase64.encode(prefix), rangeEnd: EtcdBase64.rangeEnd(of: prefix),
                startRevision: String(revision + 1))
        }
    }

    /// One line of a watch's stream.
    struct EtcdWatchLine: Decodable {
        struct Result: Decodable {
            var events: [Event]?
            var canceled: Bool?
            var cancelReason: String?
            enum CodingKeys: String, CodingKey {
                case events, canceled
                case cancelReason = "cancel_reason"
            }
        }
        struct Event: Decodable {
            var type: String?
            var kv: EtcdStoredKeyValue?
        }
        var result: Result?
    }
#endif
