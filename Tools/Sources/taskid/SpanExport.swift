#if OTLP
    import Logging
    import OTel
    import ServiceLifecycle
    import Synchronization

    /// `taskid serve --otlp-endpoint`: swift-otel bootstrapped as the process's tracer, so that
    /// every run of the registry is a span (the library's `Tracing` trait), exported over
    /// OTLP/HTTP to the endpoint. Made once, on the main task, before the server's registry.
    struct SpanExport {
        /// The exporter's background work, run in the server's service group before the server,
        /// so that it stops after it and sends the last spans.
        let service: any Service
        /// The problems swift-otel reported: counted so that `taskid serve` exits 1 when some
        /// spans could not be exported.
        let problems: ExportProblems

        /// Bootstraps the tracer for `endpoint`; swift-otel's own diagnostics go to standard
        /// error at `level` (and at least warnings, which are the export's failures).
        /// - Throws: swift-otel's error for a configuration it refuses.
        static func bootstrap(
            _ endpoint: OTLPEndpoint, environment: [String: String], level: Logger.Level
        ) throws -> SpanExport {
            let problems = ExportProblems()
            var configuration = OTel.Configuration.default
            configuration.serviceName = "taskid"
            configuration.metrics.enabled = false
            configuration.logs.enabled = false
            configuration.traces.otlpExporter.protocol = .httpProtobuf
            configuration.traces.otlpExporter.endpoint = endpoint.tracesURL
            let diagnostics = Logger(label: "taskid.otel") { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = min(level, .warning)
                return ProblemCountingLogHandler(inner: handler, problems: problems)
            }
            configuration.diagnosticLogger = .custom(diagnostics)
            // Whether and where to export is decided (the option first): the environment's say
            // on it is not asked again (in swift-otel the environment would override this
            // configuration); its other OTEL_* settings (the service name, the batch delay, the
            // export's time-out) stand.
            let rest = environment.filter { key, _ in !OTLPEndpoint.decidingVariables.contains(key) }
            let service = try OTel.bootstrap(configuration: configuration, environment: rest)
            return SpanExport(service: service, problems: problems)
        }
    }

    /// What swift-otel reported: failures (a batch not exported, a flush that failed) and
    /// drops (spans made faster than the queue took them, which swift-otel drops and says so,
    /// as the registry's trace ring drops its oldest events). `Sendable`: atomic counters.
    final class ExportProblems: Sendable {
        private let failureCounter = Atomic<Int>(0)
        private let dropCounter = Atomic<Int>(0)

        /// Failures so far: spans that were made and not exported. Any thread.
        var failures: Int { failureCounter.load(ordering: .relaxed) }
        /// Reports of spans dropped for a full queue. Any thread.
        var drops: Int { dropCounter.load(ordering: .relaxed) }

        /// Counts one report at `warning` or above that tells of spans lost. Any thread.
        func note(_ message: Logger.Message) {
            // swift-otel's batch span processor: "Failed to export batch." and "Force flush
            // failed." when spans could not be sent, "Spans were dropped …" for a full queue.
            // Its other warnings (a malformed OTEL_* variable ignored, say) lose no span.
            let text = message.description
            if text.hasPrefix("Spans were dropped") {
                dropCounter.add(1, ordering: .relaxed)
            } else if text.hasPrefix("Failed to export batch") || text.hasPrefix("Force flush failed") {
                failureCounter.add(1, ordering: .relaxed)
            }
        }
    }

    /// A log handler that counts what is logged at `warning` or above, then passes it on to
    /// `inner`. A value type, as swift-log's handlers are; used from any thread.
    struct ProblemCountingLogHandler: LogHandler {
        var inner: StreamLogHandler
        let problems: ExportProblems

        var metadata: Logger.Metadata {
            get { inner.metadata }
            set { inner.metadata = newValue }
        }

        var logLevel: Logger.Level {
            get { inner.logLevel }
            set { inner.logLevel = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { inner[metadataKey: key] }
            set { inner[metadataKey: key] = newValue }
        }

        func log(
            level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String,
            function: String, line: UInt
        ) {
            if level >= .warning { problems.note(message) }
            inner.log(
                level: level, message: message, metadata: metadata, source: source, file: file, function: function,
                line: line)
        }
    }
#endif
