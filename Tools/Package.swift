// swift-tools-version:6.2
import PackageDescription

// `taskid`, the RESP server and command-line tool, as its own package: its dependencies
// (argument parsing, logging, service lifecycle) never reach the library's users, whose package
// depends on libuv alone.
let package = Package(
    name: "TaskIdentityTools",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "taskid", targets: ["taskid"])
    ],
    dependencies: [
        .package(name: "TaskIdentity", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
    ],
    targets: [
        .executableTarget(
            name: "taskid",
            dependencies: [
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "taskidTests",
            dependencies: [
                "taskid",
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
