import ArgumentParser
import Foundation
import TaskIdentity
import TaskidCluster
import TaskidRESP
import TaskidServer

// The settings `taskid serve`'s options describe, each read and checked on its own: spans, users,
// etcd, the static cluster. `validate` and `serverConfiguration` (ServeCommand.swift) call them.
extension ServeCommand {
    /// The port the plain listener binds: `--port`, or the node's in `--cluster-config`, or 6380.
    /// Any thread.
    var plainPort: Int { port ?? (try? clusterConfiguration())??.myself.port ?? 6380 }

    /// The query buffer's limit: `--client-query-buffer-limit`, or the deprecated
    /// `--max-request-bytes` when only that is given. Any thread.
    var queryBufferLimit: Int {
        if let maxRequestBytes, clientQueryBufferLimit.bytes == RESPLimits.defaultMaxQueryBufferBytes {
            return maxRequestBytes
        }
        return clientQueryBufferLimit.bytes
    }

    /// Where spans go, from `--otlp-endpoint` or the environment; nil for no export. Any thread.
    /// - Throws: `ValidationError` for a setting that cannot be used, or for `--otlp-endpoint`
    ///   in a build without the `OTLP` trait.
    func spanEndpoint(environment: [String: String]) throws -> OTLPEndpoint? {
        #if OTLP
            do { return try OTLPEndpoint.configured(option: otlpEndpoint, environment: environment) } catch {
                throw ValidationError("\(error)")
            }
        #else
            // Checked all the same, so that a bad URL gets the same answer from every build.
            do { _ = try OTLPEndpoint.configured(option: otlpEndpoint, environment: [:]) } catch {
                throw ValidationError("\(error)")
            }
            if otlpEndpoint != nil {
                throw ValidationError("--otlp-endpoint needs taskid built with its OTLP trait (on by default)")
            }
            return nil
        #endif
    }

    /// The users the options give: `--acl-file`'s, then the default user's password from
    /// `--requirepass` or `--requirepass-file`. Any thread.
    /// - Throws: `ValidationError` for a file that cannot be read or used, an empty password,
    ///   or both password options.
    func accessControl() throws -> AccessControl {
        var access = AccessControl()
        if let aclFile {
            let text: String
            do { text = try String(contentsOfFile: aclFile, encoding: .utf8) } catch {
                throw ValidationError("--acl-file '\(aclFile)' cannot be read: \(error.localizedDescription)")
            }
            do { access = try AccessControl(aclFile: text) } catch {
                throw ValidationError("--acl-file '\(aclFile)': \(error)")
            }
        }
        var password: String?
        switch (requirepass, requirepassFile) {
        case (.some, .some):
            throw ValidationError("--requirepass and --requirepass-file exclude each other")
        case (.some(let given), nil):
            password = given
        case (nil, .some(let path)):
            let text: String
            do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw ValidationError("--requirepass-file '\(path)' cannot be read: \(error.localizedDescription)")
            }
            password = text.split(separator: "\n", omittingEmptySubsequences: false).first.map {
                String($0.hasSuffix("\r") ? $0.dropLast() : $0)
            }
        case (nil, nil):
            break
        }
        if let password {
            guard !password.isEmpty else { throw ValidationError("the password is empty") }
            access.requirePassword(Array(password.utf8))
        }
        return access
    }

    /// The etcd settings the options give: nil without `--etcd`. Any thread.
    /// - Throws: `ValidationError` for a setting that cannot be used, `--etcd` without
    ///   `--cluster-node` or beside `--cluster-config`, or a `--host` no client can be sent to.
    func etcdSettings() throws -> EtcdSettings? {
        guard let etcd else {
            if etcdLeaseSeconds != EtcdSettings.defaultLeaseSeconds || etcdCluster != "taskid" {
                throw ValidationError("--etcd-lease-seconds and --etcd-cluster need --etcd")
            }
            return nil
        }
        guard clusterConfig == nil else { throw ValidationError("--etcd and --cluster-config exclude each other") }
        guard let clusterNode else { throw ValidationError("--etcd needs --cluster-node (this node's id)") }
        guard ClusterConfiguration.isValidID(clusterNode) else {
            throw ValidationError(
                "--cluster-node '\(QuotedText.excerpt(clusterNode))' is not 1 to 40 letters, digits, '-', '_' or '.'"
            )
        }
        guard !["0.0.0.0", "::", "[::]"].contains(host) else {
            throw ValidationError(
                "--etcd: --host \(host) is not an address clients can be sent to; give the node's own")
        }
        let settings: EtcdSettings
        do {
            settings = try EtcdSettings(endpoints: etcd, leaseSeconds: etcdLeaseSeconds, clusterName: etcdCluster)
        } catch {
            throw ValidationError("\(error)")
        }
        #if Etcd
            return settings
        #else
            throw ValidationError("--etcd needs taskid built with its Etcd trait (on by default)")
        #endif
    }

    /// The cluster the options name, read from its file: nil without `--cluster-config`. Any
    /// thread.
    /// - Throws: `ValidationError` when only one of the two cluster options is given, the file
    ///   cannot be read or is wrong, or `--port` is not the node's port in it.
    func clusterConfiguration() throws -> ClusterConfiguration? {
        switch (clusterConfig, clusterNode) {
        case (nil, nil):
            return nil
        case (nil, .some) where etcd != nil:
            return nil
        case (nil, .some):
            throw ValidationError("--cluster-node needs --cluster-config or --etcd")
        case (.some, nil):
            throw ValidationError("--cluster-config needs --cluster-node (this node's id in the file)")
        case (.some(let path), .some(let id)):
            let cluster: ClusterConfiguration
            do { cluster = try ClusterConfiguration.load(path: path, myself: id) } catch {
                throw ValidationError("--cluster-config: \(error)")
            }
            if let port, port != cluster.myself.port {
                throw ValidationError(
                    "--port \(port) is not the port of node '\(id)' in \(path) (\(cluster.myself.port)); "
                        + "leave --port out to use it")
            }
            return cluster
        }
    }
}

/// A yes-or-no option, written as Redis's configuration writes one (`--protected-mode no`).
/// A value type; any thread.
enum YesNo: String, ExpressibleByArgument, CaseIterable, Sendable {
    case yes, no
}
