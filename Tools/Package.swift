// swift-tools-version:6.2
import PackageDescription

// `taskid`, the RESP server and command-line tool, as its own package: its dependencies
// (argument parsing, logging, service lifecycle, OpenTelemetry) never reach the library's users,
// whose package depends on libuv alone.
//
// Its traits, on by default: `OTLP` is `taskid serve --otlp-endpoint` (a span per run, exported
// over OTLP/HTTP with swift-otel), `Etcd` is `taskid serve --etcd` (the slot map in etcd, through
// its JSON API over AsyncHTTPClient). `--disable-default-traits` builds the server without them
// (and without swift-otel, AsyncHTTPClient and BoringSSL: the sanitizer build of the tests does).
let package = Package(
    name: "TaskIdentityTools",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "taskid", targets: ["taskid"])
    ],
    traits: [
        .trait(name: "OTLP", description: "taskid serve --otlp-endpoint: a span per run, exported over OTLP/HTTP."),
        .trait(name: "Etcd", description: "taskid serve --etcd: the slot map in etcd, on leases."),
        .default(enabledTraits: ["OTLP", "Etcd"]),
    ],
    dependencies: [
        .package(
            name: "TaskIdentity", path: "..", traits: [.trait(name: "Tracing", condition: .when(traits: ["OTLP"]))]),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // OTLP over HTTP only: the gRPC exporter would add gRPC to the build for nothing.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.25.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
    ],
    targets: [
        // glibc's malloc figures (mallinfo2, malloc_trim) for INFO and --maxmemory.
        .target(name: "CMallocStats"),
        // OpenSSL, the system's, for `--tls-port`: sessions over libuv's sockets through memory
        // buffers (docs/SERVER.md says why OpenSSL rather than swift-nio-ssl, measured).
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        // RESP, the Redis protocol: the request parser and the reply encoder. No I/O and no other
        // module: the fuzzer compiles it alone.
        .target(name: "TaskidRESP"),
        // The cluster: hash slots, the static cluster file, and slot ownership on etcd (its
        // client, the ownership state machine and what drives it).
        .target(
            name: "TaskidCluster",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Etcd"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Etcd"])),
            ]
        ),
        // The server: connections, commands, limits, TLS sessions, on the library's registry.
        .target(
            name: "TaskidServer",
            dependencies: [
                "CMallocStats",
                "COpenSSL",
                "TaskidRESP",
                "TaskidCluster",
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The command line: `taskid serve`'s options, its service, ready line and exit codes.
        .executableTarget(
            name: "taskid",
            dependencies: [
                "TaskidRESP",
                "TaskidCluster",
                "TaskidServer",
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLP"])),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["Etcd"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["Etcd"])),
            ]
        ),
        .testTarget(
            name: "taskidTests",
            dependencies: [
                "taskid",
                "TaskidRESP",
                "TaskidCluster",
                "TaskidServer",
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
