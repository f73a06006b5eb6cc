import ArgumentParser
import TaskIdentity
import UVLoop

/// W12: one tenant bursting ten times the others' rate behind one concurrency limit. Every
/// declaration is a new key of its tenant (nothing replaces anything), and a run holds one of
/// the backend's places for its service time. Reports each quiet tenant's p99 from declaration
/// to the run's answer, with round-robin fairness by tenant and without (docs/BENCHMARKS.md).
struct FairnessBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fairness",
        abstract: "One tenant bursting behind one limit (W12): quiet tenants' latency with and without fairness.")

    enum Strategy: String, CaseIterable, ExpressibleByArgument {
        /// The limit with `fairness: .roundRobin(by: tenant)`.
        case roundRobin = "round-robin"
        /// The same limit without fairness: one queue, by arrival.
        case arrival
    }

    @Option(help: "round-robin or arrival.") var impl: Strategy = .roundRobin
    @Option(help: "Quiet tenants (one more tenant bursts).") var quietTenants = 9
    @Option(help: "Declarations per second of each quiet tenant.") var quietRate = 40
    @Option(help: "The busy tenant's rate, as a multiple of a quiet tenant's.") var busyFactor = 10
    @Option(help: "Seconds between the busy tenant's bursts (its declarations come in bursts).") var burstEverySeconds =
        5
    @Option(help: "The backend's places.") var places = 16
    @Option(help: "A run's service time on the backend, in milliseconds.") var serviceMs = 20
    @Option(help: "Seconds of traffic (then the queue drains).") var seconds = 20
    @Flag(help: "Print one JSON object instead of a key=value line.") var json = false

    func validate() throws {
        guard quietTenants > 0, quietRate > 0, busyFactor > 0, burstEverySeconds > 0, places > 0, serviceMs > 0,
            seconds > 0
        else { throw ValidationError("counts and times must be positive") }
    }

    /// Every declaration, in time order: when (nanoseconds from the start) and whose (tenant 0
    /// is the busy one). Quiet tenants declare evenly; the busy tenant's share of each burst
    /// period comes at once, at the period's start.
    func schedule() -> [(at: UInt64, tenant: Int)] {
        var events: [(at: UInt64, tenant: Int)] = []
        let end = UInt64(seconds) * 1_000_000_000
        let period = UInt64(burstEverySeconds) * 1_000_000_000
        let burst = quietRate * busyFactor * burstEverySeconds
        var at: UInt64 = 0
        while at < end {
            for _ in 0..<burst { events.append((at, 0)) }
            at += period
        }
        let gap = 1_000_000_000 / UInt64(quietRate)
        for tenant in 1...quietTenants {
            // Each quiet tenant offset by a fraction of its gap, so that they do not all come at once.
            var time = gap * UInt64(tenant) / UInt64(quietTenants + 1)
            while time < end {
                events.append((time, tenant))
                time += gap
            }
        }
        events.sort { $0.at < $1.at }
        return events
    }

    func run() throws {
        let events = schedule()
        let loop = UVLoop(name: "w12")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let tenants = quietTenants + 1
        let world = FairnessWorld(tenants: tenants)
        let limit = try ConcurrencyLimit(
            maxRunning: places,
            fairness: impl == .roundRobin ? .roundRobin { (key: Int) in key % tenants } : nil)
        let registry = TaskRegistry<Int>(loop: loop)
        let service = Duration.milliseconds(serviceMs)
        let template = try TypedTaskTemplate<Int, UInt64>(limit: limit) { key, declaredAt, context in
            try await context.clock.sleep(for: service)
            context.commit { world.answer(tenant: key % tenants, declaredAt: declaredAt) }
        }
        let lastAt = events.last?.at ?? 0
        let expected = events.count
        try runOnLoop(loop) { done in
            replaySchedule(
                on: loop, count: events.count, at: { events[$0].at },
                fire: { index, start in
                    // A new key of the tenant each time: key % tenants is the tenant.
                    let key = index * tenants + events[index].tenant
                    try! registry.task(key, id: start &+ events[index].at, template: template)
                },
                until: { now in world.answers == expected || now > lastAt &+ 60_000_000_000 },
                then: {
                    Task(executorPreference: loop) {
                        await registry.shutdown()
                        done()
                    }
                })
        }
        var report = RunReport()
        report.add("impl", impl.rawValue)
        report.add("workload", "fairness")
        report.add("declarations", events.count)
        report.add("answers", world.answers)
        var quietP99s: [Int] = []
        for tenant in 0..<tenants {
            let p99 = world.latency[tenant].percentiles(prefix: "t").first { $0.0 == "t_p99_us" }?.1 ?? 0
            if tenant > 0 { quietP99s.append(p99) }
            report.add(tenant == 0 ? "busy_p99_us" : "quiet\(tenant)_p99_us", p99)
        }
        report.add("quiet_p99_max_us", quietP99s.max() ?? 0)
        report.add("quiet_p99_median_us", quietP99s.sorted()[quietP99s.count / 2])
        print(report.line(json: json))
    }
}

/// W12's answers, by tenant, on its loop. Loop thread only.
final class FairnessWorld: @unchecked Sendable {
    // @unchecked Sendable: reached only on its loop's thread (the actions' commits), and read
    // by the driver after the loop has stopped.
    let latency: [LatencyRecorder]
    var answers = 0

    init(tenants: Int) { latency = (0..<tenants).map { _ in LatencyRecorder() } }

    /// A run of `tenant` declared at `declaredAt` (monotonic nanoseconds) answered now.
    func answer(tenant: Int, declaredAt: UInt64) {
        answers += 1
        latency[tenant].record(nanoseconds: monotonicNanoseconds() &- declaredAt)
    }
}
