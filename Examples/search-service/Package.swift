// swift-tools-version:6.2
import PackageDescription

// A search-as-you-type web service on Hummingbird 2, with the task registry running on
// Hummingbird's own SwiftNIO event loops (`NIOTaskLoop`, TaskIdentity's `TaskLoopNIO` product,
// which the `NIO` trait fills).
// A nested package, so that Hummingbird never enters the library's dependency graph.
let package = Package(
    name: "search-service",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "TaskIdentity", path: "../..", traits: ["NIO"]),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
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
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
