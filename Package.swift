// swift-tools-version:6.2
import PackageDescription

// The library package stays light for people who embed it. Its modules are layered:
//
//     TaskLoopCore   the loop contract, in Swift alone: TaskLoop, time, timers, sleep, TestLoop
//     UVLoop         that contract on libuv (the only module with C in it: CLibUV)
//     TaskLoopNIO    that contract on a SwiftNIO EventLoop (trait NIO)
//     TaskIdentity   the registry, on TaskLoopCore alone
//
// so a consumer that runs its registries on NIO (TaskIdentity + TaskLoopNIO) neither builds nor
// links libuv, and a default consumer of UVLoop resolves libuv and no other package. Each
// integration is a package trait that a consumer turns on:
//
//     .package(url: "…/TaskIdentity", from: "…", traits: ["Logging", "Metrics"])
//
// One trait is not an integration: `ObservationSPI` builds observed identities on Observation's
// underscored `didSet` interface instead of its public one (see ObservationMechanism.swift).
//
// The server (`taskid`) lives in the nested package at Tools/, the benchmark tooling at
// Benchmarks/, and the example web service at Examples/search-service.
let package = Package(
    name: "TaskIdentity",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "TaskLoopCore", targets: ["TaskLoopCore"]),
        .library(name: "UVLoop", targets: ["UVLoop"]),
        .library(name: "TaskIdentity", targets: ["TaskIdentity"]),
        // Empty without the `NIO` trait.
        .library(name: "TaskLoopNIO", targets: ["TaskLoopNIO"]),
    ],
    traits: [
        .trait(name: "Logging", description: "A swift-log Logger on UVLoop and TaskRegistry for what they would otherwise swallow."),
        .trait(name: "Metrics", description: "Exports RegistryCounters as swift-metrics counters and gauges."),
        .trait(
            name: "ServiceLifecycle",
            description: "UVLoopGroup and TaskRegistry as swift-service-lifecycle Services."),
        .trait(
            name: "NIO",
            description:
                "The TaskLoopNIO module's NIOTaskLoop: a TaskLoop on a SwiftNIO EventLoop, for registries on a NIO server's own loops."
        ),
        .trait(
            name: "Tracing",
            description:
                "A swift-distributed-tracing span per run, a child of the trace context that declared it, with ServiceContext.current bound inside the action."
        ),
        .trait(
            name: "ObservationSPI",
            description:
                "Observed identities hear of writes through Observation's underscored didSet interface (@_spi(SwiftUI): after the store, on the writing thread) instead of the public withObservationTracking(_:onChange:) (before the store, plus a hop to the loop). No stability promise: a toolchain update may break the build. See ObservationMechanism."
        ),
        .default(enabledTraits: []),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.0"),
        // Used only by `swift package generate-documentation` (scripts/docs); a consumer never
        // resolves it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            path: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .brew(["libuv"])]
        ),
        // The loop contract, with no C in it: what every loop kind and the registry share.
        .target(
            name: "TaskLoopCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"]))
            ]
        ),
        .target(
            name: "UVLoop",
            dependencies: [
                "CLibUV", "TaskLoopCore",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
            ]
        ),
        .target(
            name: "TaskIdentity",
            dependencies: [
                "TaskLoopCore",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "CoreMetrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
            ]
        ),
        // The SwiftNIO adaptor: a module of its own, so that neither the loop nor the registry
        // module knows NIO. Its sources are behind `#if NIO`, so without the trait it is empty
        // and swift-nio is not resolved.
        .target(
            name: "TaskLoopNIO",
            dependencies: [
                "TaskLoopCore",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["NIO"])),
            ]
        ),
        .testTarget(name: "TaskLoopCoreTests", dependencies: ["TaskLoopCore"]),
        .testTarget(name: "UVLoopTests", dependencies: ["UVLoop", "TaskLoopCore", "CLibUV"]),
        .testTarget(name: "TaskIdentityTests", dependencies: ["TaskIdentity", "TaskLoopCore", "UVLoop"]),
        // Run with the `NIO` trait on (scripts/test turns every trait on); without it, it is empty.
        .testTarget(
            name: "TaskLoopNIOTests",
            dependencies: [
                "TaskLoopNIO", "TaskIdentity", "UVLoop",
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["NIO"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["NIO"])),
            ]
        ),
        // Run with every trait on (`scripts/test` builds with --enable-all-traits); without the
        // traits it is empty.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "TaskIdentity", "UVLoop", "CLibUV", "TaskLoopNIO",
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Logging"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(
                    name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["NIO"])),
                .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["NIO"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
                .product(
                    name: "InMemoryTracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
