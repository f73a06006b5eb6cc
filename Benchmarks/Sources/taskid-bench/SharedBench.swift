import ArgumentParser
import Foundation
import TaskIdentity
import UVLoop

/// W10: shared runs. Thousands of slots declare queries drawn from a few hundred popular ones
/// (Zipf): how many backend calls a registry whose template shares runs makes, against one
/// without sharing and a `[Task]` table (docs/BENCHMARKS.md).
struct SharedBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shared",
        abstract: "Shared runs (W10): backend calls when many slots declare the same popular queries.")

    enum Strategy: String, CaseIterable, ExpressibleByArgument {
        /// The registry, its template declared with `sharesRuns: true`.
        case shared
        /// The same registry and template without sharing.
        case registry
        /// A `[Task]` table: cancel the slot's previous task, start a new one.
        case table
    }

    @Option(help: "shared, registry or table.") var impl: Strategy = .shared
    @Option(help: "Slots, each declaring a query now and then.") var slots = 10_000
    @Option(help: "Distinct queries, drawn by popularity (Zipf, exponent 1).") var queries = 200
    @Option(help: "Seconds of declarations.") var seconds = 5
    @Option(help: "Milliseconds between one slot's declarations, on average.") var everyMs = 1_000
    @Option(help: "A search's time on the backend, in milliseconds.") var searchMs = 20
    @Flag(help: "Print one JSON object instead of a key=value line.") var json = false

    func validate() throws {
        guard slots > 0, queries > 0, seconds > 0, everyMs > 0, searchMs > 0 else {
            throw ValidationError("every count and time must be positive")
        }
    }

    /// Every declaration, in time order: when (nanoseconds from the start), which slot, which
    /// query (0 the most popular).
    func schedule() -> [(at: UInt64, slot: Int, query: Int)] {
        var random = IdentityStream()
        // Zipf with exponent 1: query k (from 1) drawn with weight 1/k, by its cumulative weight.
        var cumulative: [Double] = []
        var total = 0.0
        for rank in 1...queries {
            total += 1 / Double(rank)
            cumulative.append(total)
        }
        let end = UInt64(seconds) * 1_000_000_000
        var events: [(at: UInt64, slot: Int, query: Int)] = []
        for slot in 0..<slots {
            var at = UInt64(random.nextSlot(everyMs)) * 1_000_000
            while at < end {
                let draw = Double(random.nextSlot(1_000_000)) / 1_000_000 * total
                var low = 0
                var high = cumulative.count - 1
                while low < high {
                    let middle = (low + high) / 2
                    if cumulative[middle] < draw { low = middle + 1 } else { high = middle }
                }
                events.append((at, slot, low))
                at += UInt64(everyMs / 2 + random.nextSlot(everyMs)) * 1_000_000
            }
        }
        events.sort { $0.at < $1.at }
        return events
    }

    func run() throws {
        let events = schedule()
        let loop = UVLoop(name: "w10")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let backend = SharedBackend(queries: queries, search: .milliseconds(searchMs), loop: loop)
        let registry = impl == .table ? nil : TaskRegistry<Int>(loop: loop)
        let template = try TypedTaskTemplate<Int, Int>(sharesRuns: impl == .shared) { _, query, context in
            try await backend.serve(query)
            context.commit { backend.answers += 1 }
        }
        let tasks = LoopLocal([Int: Task<Void, Never>]())
        let live = LiveTasks()
        let measurement = Measurement()
        try runOnLoop(loop) { done in
            replaySchedule(
                on: loop, count: events.count, at: { events[$0].at },
                fire: { index, _ in
                    let event = events[index]
                    if let registry {
                        try! registry.task(event.slot, id: event.query, template: template)
                        return
                    }
                    tasks.value[event.slot]?.cancel()
                    live.started()
                    tasks.value[event.slot] = Task(executorPreference: loop) {
                        defer { live.ended() }
                        do { try await backend.serve(event.query) } catch { return }
                        if !Task.isCancelled { backend.answers += 1 }
                    }
                },
                until: { _ in backend.inFlightNow == 0 },
                then: {
                    if let registry {
                        Task(executorPreference: loop) {
                            await registry.shutdown()
                            done()
                        }
                    } else {
                        pollOnLoop(loop, until: { live.count == 0 }, then: done)
                    }
                })
        }
        var report = RunReport()
        report.add("impl", impl.rawValue)
        report.add("workload", "shared")
        report.add("slots", slots)
        report.add("queries", queries)
        report.add("declarations", events.count)
        report.add("backend_calls", backend.calls)
        report.add("answers", backend.answers)
        report.add("most_in_flight_per_query", backend.mostInFlightPerQuery)
        report.add("seconds", measurement.seconds, decimals: 3)
        report.add("cpu_seconds", measurement.cpuSeconds, decimals: 3)
        print(report.line(json: json))
    }
}

/// W10's backend: counts its calls, and the most calls for one query at once. Loop thread only.
final class SharedBackend: @unchecked Sendable {
    // @unchecked Sendable: reached only on its loop's thread (the actions and the driver's
    // timer run there), and read by the driver after the loop has stopped.
    let search: Duration
    let loop: UVLoop
    var inFlight: [Int]
    var inFlightNow = 0
    var calls = 0
    var answers = 0
    var mostInFlightPerQuery = 0

    init(queries: Int, search: Duration, loop: UVLoop) {
        self.search = search
        self.loop = loop
        inFlight = Array(repeating: 0, count: queries)
    }

    func serve(_ query: Int) async throws {
        calls += 1
        inFlight[query] += 1
        inFlightNow += 1
        mostInFlightPerQuery = max(mostInFlightPerQuery, inFlight[query])
        defer {
            inFlight[query] -= 1
            inFlightNow -= 1
        }
        try await loop.clock.sleep(for: search)
    }
}
