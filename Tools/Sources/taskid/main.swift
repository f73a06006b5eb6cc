// `taskid`: the TaskIdentity command-line tool. `taskid serve` puts a task registry behind a
// RESP2 (Redis protocol) server, so redis-cli, redis-benchmark and load-testing scripts can
// drive it. Arguments are parsed by hand to keep the library package free of dependencies.

import Dispatch
import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

let usage = """
    usage: taskid serve [--host HOST] [--port PORT] [--loops N] [--debounce-ms MS]
                        [--work sleep:MS|task-sleep:MS|upstream:HOST:PORT] [--max-clients N] [--max-request-bytes N]

    Serves a task registry over RESP2 (the Redis protocol). SET key id declares the key's task
    with that identity (restarting it when the id changes); GET key returns the id whose run
    finished last, and its generation. SIGINT or SIGTERM shuts down gracefully (exit 0).

      --host               address to listen on (default 127.0.0.1)
      --port               port (default 6380; 0 picks a free one, printed on stderr)
      --loops              event loops (registry shards), one thread each (default 1)
      --debounce-ms        debounce window of every SET (default 0)
      --work               what a SET runs (default sleep:10):
                             sleep:MS            held MS on the loop's timer, then committed; a
                                                 synchronous run, no Swift task
                             task-sleep:MS       a Swift task that sleeps MS on the loop's clock
                             upstream:HOST:PORT  a Swift task sending one PING to another server
                                                 (cancellation closes that connection)
      --max-clients        connections served at once (default 10000)
      --max-request-bytes  largest request accepted (default 1048576)
    """

/// Writes to standard error (unbuffered, so lines appear at once in scripts' logs).
func printError(_ text: String) {
    var text = text
    text.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
}

/// Exit codes: 0 clean shutdown, 1 runtime failure, 2 bad usage.
func fail(_ message: String, code: Int32 = 2) -> Never {
    printError("taskid: \(message)\n")
    if code == 2 { printError("\(usage)\n") }
    exit(code)
}

func parseServe(_ arguments: ArraySlice<String>) -> ServerConfiguration {
    var configuration = ServerConfiguration()
    var remaining = arguments
    func integer(_ option: String, _ value: String, in range: ClosedRange<Int>) -> Int {
        guard let number = Int(value), range.contains(number) else {
            fail("\(option) takes an integer in \(range.lowerBound)...\(range.upperBound), got '\(value)'")
        }
        return number
    }
    while let option = remaining.popFirst() {
        if option == "-h" || option == "--help" {
            print(usage)
            exit(0)
        }
        guard let value = remaining.popFirst() else { fail("\(option) needs a value") }
        switch option {
        case "--host": configuration.host = value
        case "--port": configuration.port = integer(option, value, in: 0...65_535)
        case "--loops": configuration.loops = integer(option, value, in: 1...64)
        case "--debounce-ms": configuration.debounceMilliseconds = integer(option, value, in: 0...86_400_000)
        case "--work":
            guard let work = ServerWork(argument: value) else {
                fail("--work takes sleep:MS, task-sleep:MS or upstream:HOST:PORT")
            }
            configuration.work = work
        case "--max-clients": configuration.maxClients = integer(option, value, in: 1...1_000_000)
        case "--max-request-bytes": configuration.maxRequestBytes = integer(option, value, in: 64...(1 << 30))
        default: fail("unknown option '\(option)'")
        }
    }
    return configuration
}

func serve(_ configuration: ServerConfiguration) -> Never {
    // A write to a peer that has gone must fail with EPIPE, not kill the server.
    signal(SIGPIPE, SIG_IGN)
    let server: RegistryServer
    do { server = try RegistryServer(configuration: configuration) } catch { fail("cannot start: \(error)", code: 1) }
    let stopped = DispatchSemaphore(value: 0)
    let port: Int
    do {
        port = try blockingWait { try await server.start() }
    } catch {
        fail("cannot listen on \(configuration.host):\(configuration.port): \(error)", code: 1)
    }
    let front = server.frontLoop
    let watchers = UncheckedSendable<[SignalWatcher]>([])
    try? front.execute {
        let shutDown: (Int32) -> Void = { signal in
            printError("taskid: signal \(signal), shutting down\n")
            for watcher in watchers.value { watcher.close() }
            Task.detached {
                await server.stop()
                stopped.signal()
            }
        }
        watchers.value = [SIGINT, SIGTERM].compactMap { try? front.watchSignal($0, shutDown) }
    }
    printError(
        "taskid: serving RESP on \(configuration.host):\(port) (loops \(configuration.loops), work \(configuration.work), "
            + "debounce \(configuration.debounceMilliseconds) ms)\n")
    stopped.wait()
    printError("taskid: stopped\n")
    exit(0)
}

/// Runs `body` to completion from this (non-cooperative) thread.
func blockingWait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    let result = UncheckedSendable<Result<T, any Error>?>(nil)
    Task.detached {
        do { result.value = .success(try await body()) } catch { result.value = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result.value!.get()
}

/// A value handed between threads at points that are ordered by a semaphore or the loop.
///
/// Unchecked `Sendable`: each hand-over is ordered by a semaphore or the loop (see above).
final class UncheckedSendable<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

let arguments = CommandLine.arguments.dropFirst()
switch arguments.first {
case "serve": serve(parseServe(arguments.dropFirst()))
case "-h", "--help": print(usage)
case nil: fail("missing command")
default: fail("unknown command '\(arguments.first!)'")
}
