// swift-tools-version:6.1
import PackageDescription

// Benchmark tooling, kept out of the library's dependency graph: the `taskid-bench` driver
// (the workloads of README.md's "Benchmarks" section) and the package-benchmark suite of micro-operations.
let package = Package(
    name: "TaskIdentityBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "TaskIdentity", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // Its default traits need a package that is not available here; malloc counts only.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "taskid-bench",
            dependencies: [
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        // `swift package benchmark`: the micro-operations, with malloc counts (deterministic,
        // so their thresholds in Thresholds/ can gate CI).
        .executableTarget(
            name: "Micro",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "TaskIdentity", package: "TaskIdentity"),
                .product(name: "UVLoop", package: "TaskIdentity"),
            ],
            path: "Benchmarks/Micro",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
