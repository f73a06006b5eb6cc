import Foundation
import Hummingbird
import Metrics
import NIOCore
import NIOPosix
import OTel
import Prometheus
import ServiceLifecycle
import TaskLoopNIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The command line: `search-service [--host H] [--port N] [--threads N] [--latency-ms N]
/// [--otlp-endpoint URL]`.
///
/// A value type; parsed on the main task.
struct Options {
    var host = "127.0.0.1"
    /// 0: any free port; the ready line says which.
    var port = 8080
    /// Event loops of the server (and registries): one per core by default.
    var threads = System.coreCount
    /// The fake backend's latency per search.
    var latencyMilliseconds = 200
    /// Where the spans go (OTLP over HTTP, e.g. `http://127.0.0.1:4318`). nil: to the
    /// collector the standard `OTEL_EXPORTER_OTLP_ENDPOINT` names, if set; otherwise no spans
    /// are exported.
    var otlpEndpoint: String?

    static let usage =
        "usage: search-service [--host H] [--port N] [--threads N] [--latency-ms N] [--otlp-endpoint URL]"

    /// Parses `arguments`, or returns nil for a malformed command line.
    static func parse(_ arguments: ArraySlice<String>) -> Options? {
        var options = Options()
        var rest = arguments
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { return nil }
            switch flag {
            case "--host": options.host = value
            case "--port":
                guard let port = Int(value), (0...65535).contains(port) else { return nil }
                options.port = port
            case "--threads":
                guard let threads = Int(value), threads > 0 else { return nil }
                options.threads = threads
            case "--latency-ms":
                guard let latency = Int(value), latency >= 0 else { return nil }
                options.latencyMilliseconds = latency
            case "--otlp-endpoint":
                guard value.hasPrefix("http://") || value.hasPrefix("https://") else { return nil }
                options.otlpEndpoint = value
            default: return nil
            }
        }
        return options
    }
}

/// Starts the service: Hummingbird on a `MultiThreadedEventLoopGroup` of its own, with the
/// search boxes' registries on the same event loops. Prints `{"event":"ready","port":N}` on
/// stdout once it listens; SIGINT or SIGTERM stop it gracefully (exit 0).
///
/// Wired as Hummingbird apps are: the OTLP exporter, the task loops and the registry are
/// `services:` of the `Application`, whose service group stops them in reverse order after the
/// HTTP server: the registry (every search cancelled and awaited), then the loops, then the
/// exporter, which sends the last spans.
@main
enum SearchService {
    /// The program's entry point, on the main task.
    static func main() async throws {
        guard let options = Options.parse(CommandLine.arguments.dropFirst()) else {
            // write(2) on descriptor 2: Swift 6 rejects the C global `stderr` as shared mutable state.
            let line = Options.usage + "\n"
            _ = line.withCString { write(2, $0, strlen($0)) }
            exit(2)
        }
        // Metrics: swift-metrics to Prometheus, scraped at /metrics.
        let prometheus = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: prometheus))
        // Tracing: swift-otel as the tracer, exporting OTLP/HTTP (before the registries are
        // made: a registry takes the tracer bootstrapped then).
        var services: [any Service] = []
        if let exporter = try bootstrapTracing(endpoint: options.otlpEndpoint) { services.append(exporter) }

        // The group is the server's; the registries run on its loops through NIOTaskLoop, so
        // a search's timers and its continuation run on the same threads as the HTTP I/O.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: options.threads)
        let boxes = try SearchBoxes(group: group, latency: .milliseconds(options.latencyMilliseconds))
        let router = Router()
        router.middlewares.add(TracingMiddleware())
        router.middlewares.add(MetricsMiddleware())
        SearchRoutes.register(on: router, boxes: boxes, prometheus: prometheus)
        let app = Application(
            router: router,
            configuration: .init(
                address: .hostname(options.host, port: options.port), serverName: "search-service"),
            services: services + [TaskLoopsService(loops: boxes.loops), boxes.registry],
            onServerRunning: { channel in
                print("{\"event\":\"ready\",\"port\":\(channel.localAddress?.port ?? -1)}")
                fflush(nil)  // every stream: the C global `stdout` is off limits in Swift 6
            },
            eventLoopGroupProvider: .shared(group)
        )
        try await app.runService()
        try await group.shutdownGracefully()
    }

    /// Bootstraps swift-otel as the process's tracer, exporting spans over OTLP/HTTP to
    /// `endpoint`, or to the one the standard `OTEL_*` variables name; returns the exporter's
    /// service, or nil (no tracer) when no endpoint is given either way. Metrics and logs stay
    /// with their own backends. On the main task, once.
    static func bootstrapTracing(endpoint: String?) throws -> (any Service)? {
        let environment = ProcessInfo.processInfo.environment
        let configured = environment["OTEL_EXPORTER_OTLP_ENDPOINT"] ?? environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        guard endpoint != nil || configured != nil else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "search-service"
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        guard let endpoint else { return try OTel.bootstrap(configuration: configuration) }
        configuration.traces.otlpExporter.endpoint = endpoint + "/v1/traces"
        // The option decides where spans go: in swift-otel the environment's endpoint would
        // override it.
        let deciding = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"]
        return try OTel.bootstrap(
            configuration: configuration, environment: environment.filter { !deciding.contains($0.key) })
    }
}

/// The task loops on the server's event loops as a `Service`: on graceful shutdown it shuts
/// them down (after the registry, listed after it), since NIO does not tell a `NIOTaskLoop`
/// that its event loop stops. Run by the application's service group.
struct TaskLoopsService: Service {
    let loops: [NIOTaskLoop]

    /// Waits for graceful shutdown, then shuts every loop down. Called by the service group.
    func run() async throws {
        try? await gracefulShutdown()
        for loop in loops { await loop.shutdown() }
    }
}
