import Hummingbird
import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The command line: `search-service [--host H] [--port N] [--threads N] [--latency-ms N]`.
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

    static let usage = "usage: search-service [--host H] [--port N] [--threads N] [--latency-ms N]"

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
            default: return nil
            }
        }
        return options
    }
}

/// Starts the service: Hummingbird on a `MultiThreadedEventLoopGroup` of its own, with the
/// search boxes' registries on the same event loops. Prints `{"event":"ready","port":N}` on
/// stdout once it listens; SIGINT or SIGTERM stop it gracefully (exit 0).
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
        // The group is the server's; the registries run on its loops through NIOTaskLoop, so
        // a search's timers and its continuation run on the same threads as the HTTP I/O.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: options.threads)
        let boxes = try SearchBoxes(group: group, latency: .milliseconds(options.latencyMilliseconds))
        let router = Router()
        SearchRoutes.register(on: router, boxes: boxes)
        let app = Application(
            router: router,
            configuration: .init(
                address: .hostname(options.host, port: options.port), serverName: "search-service"),
            onServerRunning: { channel in
                print("{\"event\":\"ready\",\"port\":\(channel.localAddress?.port ?? -1)}")
                fflush(nil)  // every stream: the C global `stdout` is off limits in Swift 6
            },
            eventLoopGroupProvider: .shared(group)
        )
        try await app.runService()
        // NIO does not tell a NIOTaskLoop that its event loop stops: shut the registries and
        // their loops down first, then the group.
        await boxes.shutdown()
        try await group.shutdownGracefully()
    }
}
