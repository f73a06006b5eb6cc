import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The built `taskid` binary run as a child process, its standard output and error piped.
///
/// Each method blocks on a Dispatch thread, not on the cooperative pool, so that a test waiting
/// for the child does not hold one of the pool's few threads. Use from one task at a time.
///
/// Unchecked `Sendable`: it crosses to those Dispatch threads, one call at a time.
final class TaskidProcess: @unchecked Sendable {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private var unread: [UInt8] = []

    /// `taskid` beside the test binary: `swift build` and `swift test` build every product into
    /// the same folder as the tests (Linux: the test binary is found through /proc/self/exe).
    static func binary() throws -> URL {
        let tests = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return URL(fileURLWithPath: tests).deletingLastPathComponent().appendingPathComponent("taskid")
    }

    /// Starts `taskid arguments…`.
    /// - Throws: when the binary is missing or cannot be started.
    init(_ arguments: [String]) throws {
        process.executableURL = try Self.binary()
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    deinit {
        // A test that failed half-way must not leave a server behind.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The next line of standard output, without its newline; nil at end of file.
    func readLine() async -> String? {
        await offThePool {
            while true {
                if let newline = self.unread.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: self.unread[..<newline], as: UTF8.self)
                    self.unread.removeFirst(newline + 1)
                    return line
                }
                let chunk = self.output.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                self.unread.append(contentsOf: chunk)
            }
        }
    }

    /// Standard output from here to end of file (the child closes it when it exits).
    func remainingOutput() async -> String {
        await offThePool {
            let rest = self.unread + self.output.fileHandleForReading.readDataToEndOfFile()
            self.unread = []
            return String(decoding: rest, as: UTF8.self)
        }
    }

    /// All of standard error, once the child has closed it.
    func errorOutput() async -> String {
        await offThePool { String(decoding: self.errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
    }

    /// Sends `signal` to the child.
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the child to end; returns how it ended.
    func exit() async -> (reason: Process.TerminationReason, status: Int32) {
        await offThePool {
            self.process.waitUntilExit()
            return (self.process.terminationReason, self.process.terminationStatus)
        }
    }

    private func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }
}
