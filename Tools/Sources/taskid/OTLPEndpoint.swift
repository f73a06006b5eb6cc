/// Where `taskid serve` sends its spans (`--otlp-endpoint`, or the standard `OTEL_*`
/// variables), checked at start: a wrong URL is refused with the reason, never discovered when
/// the first export fails. A value type; any thread.
struct OTLPEndpoint: Equatable, CustomStringConvertible {
    /// The URL spans are posted to: the collector's base URL plus `/v1/traces`, or the
    /// traces-specific URL as given.
    let tracesURL: String

    var description: String { tracesURL }

    /// The variables that decide whether and where spans go, and how: read here, and not
    /// handed to swift-otel, which would let them override the decision.
    static let decidingVariables: Set = [
        "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED",
    ]

    /// The endpoint the command line or the environment names; nil when neither asks for an
    /// export. `--otlp-endpoint` wins over every variable; then
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (the full URL), then `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (a base URL). `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true` turn the
    /// environment's off; with the environment's endpoint, an `OTEL_EXPORTER_OTLP_PROTOCOL`
    /// other than `http/protobuf` is refused (this build speaks OTLP/HTTP with protobuf only).
    /// - Throws: `OTLPEndpointError`, naming the setting and why.
    static func configured(option: String?, environment: [String: String]) throws(OTLPEndpointError) -> OTLPEndpoint? {
        if let option { return try OTLPEndpoint(base: option, setting: "--otlp-endpoint") }
        if environment["OTEL_TRACES_EXPORTER"] == "none" || environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" {
            return nil
        }
        let tracesURL = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        let base = environment["OTEL_EXPORTER_OTLP_ENDPOINT"]
        guard tracesURL != nil || base != nil else { return nil }
        for key in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let value = environment[key], value != "http/protobuf" {
                throw OTLPEndpointError(
                    setting: key, value: value,
                    reason: "this taskid exports OTLP over HTTP with protobuf only (http/protobuf)")
            }
        }
        if let tracesURL {
            try Self.checkURL(tracesURL, setting: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", pathAllowed: true)
            return OTLPEndpoint(tracesURL: tracesURL)
        }
        return try OTLPEndpoint(base: base!, setting: "OTEL_EXPORTER_OTLP_ENDPOINT")
    }

    private init(tracesURL: String) {
        self.tracesURL = tracesURL
    }

    /// The endpoint of a collector whose base URL is `base` (`http://host:4318`).
    init(base: String, setting: String) throws(OTLPEndpointError) {
        try Self.checkURL(base, setting: setting, pathAllowed: false)
        tracesURL = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/traces"
    }

    /// Refuses what is not `http(s)://HOST[:PORT]` (and a path, when allowed): no scheme or
    /// another, an empty host, a port that is not a number in 1...65535, spaces or control
    /// characters.
    private static func checkURL(_ url: String, setting: String, pathAllowed: Bool) throws(OTLPEndpointError) {
        func refuse(_ reason: String) -> OTLPEndpointError {
            OTLPEndpointError(setting: setting, value: url, reason: reason)
        }
        guard url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            throw refuse("spaces and control characters are not allowed")
        }
        let rest: Substring
        if url.hasPrefix("http://") {
            rest = url.dropFirst("http://".count)
        } else if url.hasPrefix("https://") {
            rest = url.dropFirst("https://".count)
        } else {
            throw refuse("the URL must start with http:// or https://")
        }
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        if !pathAllowed && path != "" && path != "/" {
            throw refuse("give the collector's base URL, without a path: spans go to <URL>/v1/traces")
        }
        var host = authority
        if authority.hasPrefix("[") {
            // An IPv6 literal: [::1] or [::1]:4318.
            guard let close = authority.firstIndex(of: "]") else { throw refuse("an IPv6 address needs its closing ]") }
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw refuse("only :PORT may follow an IPv6 address") }
                try checkPort(after.dropFirst(), refuse)
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            try checkPort(authority[authority.index(after: colon)...], refuse)
        }
        guard host.count > (host.hasPrefix("[") ? 2 : 0) else { throw refuse("the host is empty") }
        if !host.hasPrefix("[") {
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
            guard host.allSatisfy({ allowed.contains($0) }) else {
                throw refuse("the host may hold letters, digits, '.', '-' and '_' only")
            }
        }
    }

    private static func checkPort(
        _ port: Substring, _ refuse: (String) -> OTLPEndpointError
    ) throws(OTLPEndpointError) {
        guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port),
            (1...65_535).contains(number)
        else { throw refuse("the port must be a number in 1...65535") }
    }
}

/// An OTLP setting that cannot be used, and why. A value type; any thread.
struct OTLPEndpointError: Error, Equatable, CustomStringConvertible {
    /// The option or variable, e.g. `--otlp-endpoint` or `OTEL_EXPORTER_OTLP_ENDPOINT`.
    var setting: String
    /// The value given.
    var value: String
    /// Why it is refused.
    var reason: String

    var description: String { "\(setting) '\(printable)' cannot be used: \(reason)" }

    /// The value with its control characters escaped: a refusal never writes raw escapes to
    /// a terminal.
    private var printable: String {
        value.unicodeScalars.map { $0.value >= 0x20 && $0.value != 0x7F ? String($0) : $0.escaped(asASCII: true) }
            .joined()
    }
}
