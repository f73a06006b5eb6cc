// swift-tools-version:6.2
import PackageDescription

// A search-as-you-type web service on Hummingbird 2, with the task registry running on
// Hummingbird's own SwiftNIO event loops (`NIOTaskLoop`, TaskIdentity's `TaskLoopNIO` product,
// which the `NIO` trait fills), wired the way a Hummingbird app is: the registry and its loops
// are `services:` of the `Application`; `TracingMiddleware` and `MetricsMiddleware` trace and
// count each request; swift-otel exports the spans over OTLP/HTTP (each search run a span,
// trait `Tracing`), and swift-prometheus serves `/metrics` (the registry's timers, trait
// `Metrics`).
// A nested package, so that Hummingbird never enters the library's dependency graph.
let package = Package(
    name: "search-service",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(
            name: "TaskIdentity", path: "../..", traits: ["NIO", "Tracing", "Metrics", "ServiceLifecycle"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        // OTLP over HTTP only: the gRPC exporter would add gRPC to the build for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        .executableTarget(
            name: "SearchService",
            dependencies: [
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "TaskLoopNIO", package: "TaskIdentity"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
