// swift-tools-version:6.1
import PackageDescription

// The library package stays light for people who embed it: libuv and nothing else.
// Benchmark tooling lives in the nested package at Benchmarks/.
let package = Package(
    name: "TaskIdentity",
    products: [
        .library(name: "UVLoop", targets: ["UVLoop"]),
        .library(name: "TaskIdentity", targets: ["TaskIdentity"]),
        .executable(name: "taskid", targets: ["taskid"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV",
            path: "CLibUV",
            pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"])]
        ),
        .target(name: "UVLoop", dependencies: ["CLibUV"]),
        .target(name: "TaskIdentity", dependencies: ["UVLoop"]),
        .executableTarget(name: "taskid", dependencies: ["TaskIdentity", "UVLoop"]),
        .testTarget(name: "UVLoopTests", dependencies: ["UVLoop", "CLibUV"]),
        .testTarget(name: "TaskIdentityTests", dependencies: ["TaskIdentity", "UVLoop"]),
        .testTarget(name: "taskidTests", dependencies: ["taskid", "TaskIdentity", "UVLoop"]),
    ],
    swiftLanguageModes: [.v6]
)
