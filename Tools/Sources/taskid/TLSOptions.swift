import ArgumentParser
import TaskidServer

/// `taskid serve`'s TLS options, as Redis names them, and their checks. Parsed on the main task;
/// a value type, any thread.
struct TLSOptions: ParsableArguments {
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Also serve RESP over TLS on this port (0: any free port; the ready line's tls_port says which). Needs --tls-cert-file and --tls-key-file.",
            valueName: "port"))
    var tlsPort: Int?

    @Option(help: ArgumentHelp("The server's certificate (PEM), followed by its chain.", valueName: "file"))
    var tlsCertFile: String?

    @Option(help: ArgumentHelp("The certificate's private key (PEM, not encrypted).", valueName: "file"))
    var tlsKeyFile: String?

    @Option(
        help: ArgumentHelp(
            "The CA certificates (PEM) that client certificates must chain to.", valueName: "file"))
    var tlsCaCertFile: String?

    @Option(
        help: ArgumentHelp(
            """
            yes: a TLS client must show a certificate signed by --tls-ca-cert-file; optional: one it \
            shows must verify; no: none is asked for. Default: yes with --tls-ca-cert-file, no without.
            """,
            valueName: "yes|no|optional"))
    var tlsAuthClients: TLSClientAuthentication?

    @Flag(help: "Serve TLS only: no plain TCP port (--port is then not bound).")
    var tlsOnly = false

    /// The checked settings; nil without `--tls-port`. `plainPort` is the port the plain
    /// listener binds (`--port`, its default, or a cluster node's), and `portGiven` whether
    /// `--port` was given. With `checkingFiles`, the certificate, key and CA are loaded, so that
    /// a file that cannot be used is refused before anything starts. Any thread.
    /// - Throws: `ValidationError` naming the option and the reason.
    func settings(plainPort: Int, portGiven: Bool, checkingFiles: Bool) throws -> TLSSettings? {
        guard let tlsPort else {
            let given = [
                tlsCertFile.map { _ in "--tls-cert-file" }, tlsKeyFile.map { _ in "--tls-key-file" },
                tlsCaCertFile.map { _ in "--tls-ca-cert-file" }, tlsAuthClients.map { _ in "--tls-auth-clients" },
                tlsOnly ? "--tls-only" : nil,
            ].compactMap { $0 }
            if let first = given.first { throw ValidationError("\(first) needs --tls-port") }
            return nil
        }
        guard (0...65_535).contains(tlsPort) else {
            throw ValidationError("--tls-port takes an integer in 0...65535, got '\(tlsPort)'")
        }
        if tlsOnly && portGiven {
            throw ValidationError("--tls-only binds no plain port: leave --port out, and give the port as --tls-port")
        }
        if plainPort != 0, plainPort == tlsPort, !tlsOnly {
            throw ValidationError(
                "--tls-port \(tlsPort) is the plain port too (--port, 6380 by default): give two different ports, or --tls-only"
            )
        }
        guard let tlsCertFile else {
            throw ValidationError("--tls-port needs --tls-cert-file (the server's certificate)")
        }
        guard let tlsKeyFile else { throw ValidationError("--tls-port needs --tls-key-file (the certificate's key)") }
        let authentication = tlsAuthClients ?? (tlsCaCertFile == nil ? .no : .yes)
        if authentication != .no && tlsCaCertFile == nil {
            throw ValidationError(
                "--tls-auth-clients \(authentication) needs --tls-ca-cert-file (the CA that signs client certificates)")
        }
        let settings = TLSSettings(
            port: tlsPort, certificateFile: tlsCertFile, keyFile: tlsKeyFile, caCertificateFile: tlsCaCertFile,
            clientAuthentication: authentication, only: tlsOnly)
        if checkingFiles {
            do { _ = try TLSContext.server(settings) } catch { throw ValidationError("\(error)") }
        }
        return settings
    }
}

extension TLSClientAuthentication: ExpressibleByArgument {}
