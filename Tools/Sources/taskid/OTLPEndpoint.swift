import TaskidCluster

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
            if let problem = HTTPURLCheck.problem(with: tracesURL, pathAllowed: true) {
                throw OTLPEndpointError(
                    setting: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: tracesURL, reason: problem)
            }
            return OTLPEndpoint(tracesURL: tracesURL)
        }
        return try OTLPEndpoint(base: base!, setting: "OTEL_EXPORTER_OTLP_ENDPOINT")
    }

    private init(tracesURL: String) {
        self.tracesURL = tracesURL
    }

    /// The endpoint of a collector whose base URL is `base` (`http://host:4318`).
    init(base: String, setting: String) throws(OTLPEndpointError) {
        if let problem = HTTPURLCheck.problem(with: base, pathAllowed: false, pathNote: "spans go to <URL>/v1/traces") {
            throw OTLPEndpointError(setting: setting, value: base, reason: problem)
        }
        tracesURL = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/v1/traces"
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

    var description: String { "\(setting) '\(QuotedText.excerpt(value))' cannot be used: \(reason)" }
}
