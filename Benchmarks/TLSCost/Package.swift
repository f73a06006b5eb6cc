// swift-tools-version:6.2
import PackageDescription

// What TLS costs the server per request, with each library it could use: the system's OpenSSL
// through memory buffers (as taskid serve does on libuv) against swift-nio-ssl's handler (BoringSSL,
// on a NIO channel). Its own package, so that neither the tests nor the server build BoringSSL
// for it; scripts/tls-cost builds and runs it.
let package = Package(
    name: "TLSCost",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
    ],
    targets: [
        .systemLibrary(name: "CBenchOpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .executableTarget(
            name: "tls-cost",
            dependencies: [
                "CBenchOpenSSL",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
