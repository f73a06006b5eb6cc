// swift-tools-version:6.2
import PackageDescription

// `taskid`, the RESP server and command-line tool, as its own package: its dependencies
// (argument parsing, logging, service lifecycle) never reach the library's users.
let package = Package(
    name: "TaskIdentityTools",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "taskid", targets: ["taskid"])
    ],
    dependencies: [
        .package(name: "TaskIdentity", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "taskid",
            dependencies: [
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
            ]
        ),
        .testTarget(
            name: "taskidTests",
            dependencies: [
                "taskid",
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
