import Foundation

/// One run's result: printed as one `key=value` line (docs/BENCHMARKS.md), or as JSON.
struct RunReport {
    private(set) var fields: [(String, String)] = []

    mutating func add(_ key: String, _ value: String) { fields.append((key, value)) }
    mutating func add(_ key: String, _ value: Int) { fields.append((key, String(value))) }
    mutating func add(_ key: String, _ value: Double, decimals: Int) {
        fields.append((key, String(format: "%.\(decimals)f", value)))
    }

    func value(_ key: String) -> String? { fields.first { $0.0 == key }?.1 }

    func line(json: Bool) -> String {
        if !json { return fields.map { "\($0.0)=\($0.1)" }.joined(separator: " ") }
        let body = fields.map { key, value in
            let isNumber = Double(value) != nil
            return "\"\(key)\":" + (isNumber ? value : "\"\(value)\"")
        }
        return "{" + body.joined(separator: ",") + "}"
    }
}

/// CPU seconds (user + system) this process has used so far.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The process's resident memory now, in MiB (from /proc/self/statm).
func residentMiB() -> Double {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let parts = text.split(separator: " ")
    guard parts.count > 1, let pages = Double(parts[1]) else { return 0 }
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

/// The process's peak resident memory so far, in MiB.
func peakResidentMiB() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// Monotonic nanoseconds.
@inline(__always)
func monotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

/// Blocks the calling (non-loop, non-cooperative) thread until `body` finishes.
/// The driver has a synchronous main so that valgrind can run it.
func blockOn<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let done = DispatchSemaphore(value: 0)
    // nonisolated(unsafe): written before `done.signal()`, read after `done.wait()`.
    nonisolated(unsafe) var result: Result<T, any Error>?
    Task.detached {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        done.signal()
    }
    done.wait()
    return try result!.get()
}

/// Writes a progress line to stderr, at most once a second, for long runs.
struct ProgressLine {
    let label: String
    private var lastPrint = monotonicNanoseconds()
    private let started = monotonicNanoseconds()
    private var printed = false

    init(label: String) { self.label = label }

    mutating func update(done: Int, of total: Int) {
        let now = monotonicNanoseconds()
        guard now - lastPrint > 1_000_000_000, now - started > 2_000_000_000 else { return }
        lastPrint = now
        printed = true
        let percent = total > 0 ? Double(done) * 100 / Double(total) : 0
        FileHandle.standardError.write(
            "\r\(label): \(done)/\(total) (\(String(format: "%.0f", percent))%)   ".data(using: .utf8)!)
    }

    func finish() {
        if printed { FileHandle.standardError.write("\n".data(using: .utf8)!) }
    }
}
