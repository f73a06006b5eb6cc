import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Whether a TLS client must show a certificate that `--tls-ca-cert-file` signed
/// (`--tls-auth-clients`, as Redis words it). Any thread.
package enum TLSClientAuthentication: String, CaseIterable, Sendable, Equatable {
    /// A client without a certificate signed by the CA is refused in the handshake.
    case yes
    /// Certificates are not asked for.
    case no
    /// A client may go without one; a certificate it shows must verify.
    case optional
}

/// `taskid serve`'s TLS options, checked: where the certificate, its key and the CA are, and
/// whether clients show certificates. A value type; any thread.
package struct TLSSettings: Sendable, Equatable {
    /// `--tls-port`: where TLS clients connect (0: any free port).
    package var port: Int
    /// `--tls-cert-file`: the server's certificate (PEM), followed by its chain.
    package var certificateFile: String
    /// `--tls-key-file`: the certificate's private key (PEM, not encrypted).
    package var keyFile: String
    /// `--tls-ca-cert-file`: the CAs that client certificates must chain to; nil for none.
    package var caCertificateFile: String?
    /// `--tls-auth-clients`.
    package var clientAuthentication: TLSClientAuthentication
    /// `--tls-only`: no plain TCP port.
    package var only: Bool

    /// Each setting as given.
    package init(
        port: Int, certificateFile: String, keyFile: String, caCertificateFile: String?,
        clientAuthentication: TLSClientAuthentication, only: Bool
    ) {
        self.port = port
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.caCertificateFile = caCertificateFile
        self.clientAuthentication = clientAuthentication
        self.only = only
    }
}

/// Why a TLS context could not be made: a file that cannot be read or used, with OpenSSL's own
/// reason. A value type; any thread.
package struct TLSSetupError: Error, CustomStringConvertible, Equatable {
    /// What failed and why, for the operator.
    package var description: String
}

/// Why a TLS session ended in error: a failed handshake (a certificate refused, a client that
/// does not speak TLS) or a corrupt record, with OpenSSL's reason. A value type; any thread.
package struct TLSSessionError: Error, CustomStringConvertible, Equatable {
    /// OpenSSL's reason.
    package var description: String
}

/// An OpenSSL context (`SSL_CTX`): the certificate, key and verification settings every session
/// it makes shares, for the server's TLS port or for a client (the tests connect through one).
///
/// Any thread: configured by its factory, then only read.
// @unchecked Sendable: nothing changes after the factory returns, and OpenSSL makes sessions from a configured SSL_CTX on several threads at once (TLSTests shares one between two loops).
package final class TLSContext: @unchecked Sendable {
    /// Owned: freed in `deinit`. Sessions made from it hold their own reference to it.
    package let context: OpaquePointer
    /// Whether sessions accept (a server) or connect (a client).
    package let isServer: Bool

    /// OpenSSL initialized before its first use, without its exit handler (see the shim).
    private static let initialized = copenssl_init_without_exit_handler() == 1

    private init(method: OpaquePointer?, isServer: Bool) throws(TLSSetupError) {
        guard Self.initialized else {
            throw TLSSetupError(description: "OpenSSL cannot be initialized: \(Self.drainErrors())")
        }
        guard let method, let context = SSL_CTX_new(method) else {
            throw TLSSetupError(description: "OpenSSL cannot make a TLS context: \(Self.drainErrors())")
        }
        self.context = context
        self.isServer = isServer
        // TLS 1.2 and 1.3, as Redis allows by default; older versions are broken.
        _ = copenssl_ctx_set_min_proto_version(context, TLS1_2_VERSION)
        copenssl_ctx_refuse_renegotiation(context)
    }

    deinit { SSL_CTX_free(context) }

    /// The server's context from `settings`: its certificate chain and key (which must match),
    /// and with a CA, the verification of client certificates that `clientAuthentication` asks.
    ///
    /// Any thread. - Throws: `TLSSetupError` naming the file and OpenSSL's reason.
    package static func server(_ settings: TLSSettings) throws(TLSSetupError) -> TLSContext {
        let tls = try TLSContext(method: TLS_server_method(), isServer: true)
        let context = tls.context
        try checkReadable(settings.certificateFile, option: "--tls-cert-file")
        try checkReadable(settings.keyFile, option: "--tls-key-file")
        // No pass phrase is asked for on the terminal: an encrypted key fails, and says so.
        SSL_CTX_set_default_passwd_cb(context) { _, _, _, _ in 0 }
        guard SSL_CTX_use_certificate_chain_file(context, settings.certificateFile) == 1 else {
            throw TLSSetupError(
                description: "--tls-cert-file '\(settings.certificateFile)' is not a PEM certificate: \(drainErrors())")
        }
        guard SSL_CTX_use_PrivateKey_file(context, settings.keyFile, SSL_FILETYPE_PEM) == 1 else {
            throw TLSSetupError(
                description: "--tls-key-file '\(settings.keyFile)' is not a PEM private key (an encrypted key is not "
                    + "supported), or not the key of --tls-cert-file '\(settings.certificateFile)': \(drainErrors())")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw TLSSetupError(
                description: "--tls-key-file '\(settings.keyFile)' is not the key of --tls-cert-file "
                    + "'\(settings.certificateFile)': \(drainErrors())")
        }
        // Sessions resumed by a client must carry the same verification: OpenSSL refuses to
        // resume a verified session without an id context.
        _ = SSL_CTX_set_session_id_context(context, "taskid", 6)
        if let ca = settings.caCertificateFile {
            try checkReadable(ca, option: "--tls-ca-cert-file")
            guard SSL_CTX_load_verify_locations(context, ca, nil) == 1, let names = SSL_load_client_CA_file(ca) else {
                throw TLSSetupError(
                    description: "--tls-ca-cert-file '\(ca)' holds no PEM certificate: \(drainErrors())")
            }
            // Sent in the certificate request: a client with several certificates picks one.
            SSL_CTX_set_client_CA_list(context, names)
        }
        switch settings.clientAuthentication {
        case .yes: SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        case .optional: SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        case .no: SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        return tls
    }

    /// A client's context: the server's certificate must chain to `caFile` (no verification
    /// without one), and `certificateFile` with `keyFile` is shown when the server asks.
    ///
    /// Any thread. - Throws: `TLSSetupError`.
    package static func client(caFile: String?, certificateFile: String? = nil, keyFile: String? = nil)
        throws(TLSSetupError)
        -> TLSContext
    {
        let tls = try TLSContext(method: TLS_client_method(), isServer: false)
        if let caFile {
            guard SSL_CTX_load_verify_locations(tls.context, caFile, nil) == 1 else {
                throw TLSSetupError(description: "CA file '\(caFile)' cannot be used: \(drainErrors())")
            }
            SSL_CTX_set_verify(tls.context, SSL_VERIFY_PEER, nil)
        }
        if let certificateFile, let keyFile {
            guard SSL_CTX_use_certificate_chain_file(tls.context, certificateFile) == 1,
                SSL_CTX_use_PrivateKey_file(tls.context, keyFile, SSL_FILETYPE_PEM) == 1
            else {
                throw TLSSetupError(
                    description: "client certificate '\(certificateFile)' cannot be used: \(drainErrors())")
            }
        }
        return tls
    }

    /// A file that cannot be opened gets the system's reason, which OpenSSL's error queue words
    /// less plainly.
    private static func checkReadable(_ path: String, option: String) throws(TLSSetupError) {
        guard access(path, R_OK) == 0 else {
            throw TLSSetupError(description: "\(option) '\(path)' cannot be read: \(String(cString: strerror(errno)))")
        }
    }

    /// OpenSSL's queued errors on this thread, oldest first, as one line; the queue is left
    /// empty, so that the next failure reports only its own. Any thread.
    static func drainErrors() -> String {
        var reasons: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while case let code = ERR_get_error(), code != 0 {
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
    }
}
