import ArgumentParser
import Foundation
import TaskIdentity
import UVLoop

/// W9: a backend that serves 64 at once, behind thousands of typists. Each typist types bursts
/// of keystrokes with pauses between them; each keystroke is a new query for the typist's
/// search, and a search holds one of the backend's places for its service time. Compares the
/// registry with a concurrency limit against what a user writes by hand (docs/BENCHMARKS.md).
/// W11 is the same world at twice what the backend serves (`--seconds 30 --search-ms 50`): a
/// bounded queue that sheds (`limit-shed`) against the unbounded limit and the semaphore.
struct BackendBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backend",
        abstract: "A backend that serves 64 at once (W9): typists' searches through a limit, or a semaphore.")

    enum Strategy: String, CaseIterable, ExpressibleByArgument {
        /// The registry, its template declared with a `ConcurrencyLimit` of the backend's places.
        case limit
        /// The same limit with a bounded queue (`--max-queued`) that sheds its oldest (W11).
        case limitShed = "limit-shed"
        /// A `[Task]` table (cancel the typist's previous task, start a new one) whose action
        /// waits on a semaphore with a plain `wait()`.
        case tableWait = "table-wait"
        /// The same table with a cancellation-aware wait.
        case tableCancellable = "table-cancellable"
        /// The registry without a limit, the cancellation-aware semaphore inside the action.
        case registrySemaphore = "registry-semaphore"
    }

    @Option(help: "limit, limit-shed, table-wait, table-cancellable or registry-semaphore.") var impl: Strategy = .limit
    @Option(help: "limit-shed: how many searches may wait for a place before the oldest is shed.") var maxQueued = 128
    @Option(help: "Simulated typists, one slot each.") var typists = 10_000
    @Option(help: "Seconds of typing (then the queue drains).") var seconds = 10
    @Option(help: "The backend's places: searches it serves at once.") var backendPlaces = 64
    @Option(help: "A search's service time on the backend, in milliseconds.") var searchMs = 20
    @Option(help: "Keystrokes in a burst.") var burst = 6
    @Option(help: "Milliseconds between keystrokes in a burst.") var keystrokeMs = 100
    @Option(help: "Shortest pause after a burst, in milliseconds.") var pauseMinMs = 2_000
    @Option(help: "Longest pause after a burst, in milliseconds.") var pauseMaxMs = 5_000
    @Option(help: "How long the queue may drain after the typing, at most, in seconds.") var drainSeconds = 30
    @Option(
        help: ArgumentHelp(
            "traffic (the typing) or waiting-memory (bytes per run waiting for the backend).",
            valueName: "MEASURE"))
    var measure = "traffic"
    @Option(help: "waiting-memory: runs waiting at once.") var waiting = 100_000
    @Flag(help: "Print one JSON object instead of a key=value line.") var json = false

    func validate() throws {
        guard typists > 0, seconds > 0, backendPlaces > 0, searchMs > 0, burst > 0, keystrokeMs > 0,
            pauseMinMs >= 0, pauseMaxMs >= pauseMinMs, drainSeconds >= 0, waiting > 0
        else { throw ValidationError("counts and times must be positive (pauses not negative, min ≤ max)") }
        guard ["traffic", "waiting-memory"].contains(measure) else {
            throw ValidationError("--measure is traffic or waiting-memory, got '\(measure)'")
        }
    }

    func run() throws {
        let report = measure == "traffic" ? try runTraffic() : try runWaitingMemory()
        print(report.line(json: json))
    }

    // MARK: - Traffic

    /// Every keystroke of the run, in time order: when (nanoseconds from the start) and whose.
    func schedule() -> [(at: UInt64, typist: Int)] {
        var random = IdentityStream()
        var events: [(at: UInt64, typist: Int)] = []
        let end = UInt64(seconds) * 1_000_000_000
        for typist in 0..<typists {
            // Typists start spread over one pause, so the first second is not one burst.
            var at = UInt64(random.nextSlot(pauseMaxMs + 1)) * 1_000_000
            while at < end {
                for key in 0..<burst {
                    let time = at + UInt64(key * keystrokeMs) * 1_000_000
                    if time < end { events.append((time, typist)) }
                }
                let pause = pauseMinMs + random.nextSlot(pauseMaxMs - pauseMinMs + 1)
                at += UInt64((burst - 1) * keystrokeMs + pause) * 1_000_000
            }
        }
        events.sort { $0.at < $1.at }
        return events
    }

    func runTraffic() throws -> RunReport {
        let events = schedule()
        let loop = UVLoop(name: "w9")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let world = BackendWorld(typists: typists, places: backendPlaces, searchMs: searchMs, loop: loop)
        let strategy = try Runner(impl, world: world, maxQueued: maxQueued)
        let measurement = Measurement()
        // Resident memory a third of the way through the typing and at its end: flat under a
        // bounded queue, growing under an unbounded one.
        let third = events.count / 3
        let drainLimit = UInt64(drainSeconds) * 1_000_000_000
        let lastAt = events.last?.at ?? 0
        try runOnLoop(loop) { done in
            replaySchedule(
                on: loop, count: events.count, at: { events[$0].at },
                fire: { index, start in
                    // From the keystroke's planned time: a late driver shows up as latency.
                    strategy.keystroke(events[index].typist, at: start &+ events[index].at)
                    if index & 255 == 0 { world.noteQueueDepth(strategy.waitingCount) }
                    if index == third { world.residentAtThird = residentMiB() }
                },
                until: { now in world.unanswered == 0 || now > lastAt &+ drainLimit },
                then: { strategy.stop { done() } })
        }
        let residentAtEnd = residentMiB()
        let cpu = measurement.cpuSeconds
        var report = RunReport()
        report.add("impl", impl.rawValue)
        report.add("workload", "backend")
        report.add("typists", typists)
        report.add("keystrokes", events.count)
        report.add("backend_calls", world.calls)
        report.add("wasted_calls", world.wasted)
        report.add("most_in_backend", world.mostInBackend)
        report.add("answers", world.answers)
        report.add("unanswered", world.unanswered)
        report.add("seconds", measurement.seconds, decimals: 3)
        report.add("answers_per_second", Double(world.answers) / measurement.seconds, decimals: 0)
        report.add("cpu_seconds", cpu, decimals: 3)
        report.add("cpu_us_per_answer", cpu * 1e6 / Double(max(world.answers, 1)), decimals: 1)
        for (name, value) in world.latency.percentiles(prefix: "answer") { report.add(name, value) }
        if let counters = strategy.finalCounters, counters.queued > 0 {
            report.add("queued", Int(counters.queued))
            report.add("mean_queue_wait_us", Int(counters.queueWaitNanoseconds / 1000 / counters.queued))
        }
        report.add("shed", Int(strategy.finalCounters?.shed ?? 0))
        report.add("queue_peak", world.queuePeak)
        report.add("rss_third_mib", world.residentAtThird, decimals: 1)
        report.add("rss_end_mib", residentAtEnd, decimals: 1)
        return report
    }

    // MARK: - Waiting memory

    /// Bytes per run waiting for the backend: `waiting` runs made to wait (the backend's
    /// places all held by runs that never end), resident memory before and after.
    func runWaitingMemory() throws -> RunReport {
        let loop = UVLoop(name: "w9-memory")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let world = BackendWorld(typists: waiting + backendPlaces, places: backendPlaces, searchMs: 1 << 30, loop: loop)
        let strategy = try Runner(impl, world: world, maxQueued: waiting)
        let count = waiting
        let places = backendPlaces
        // The backend's places, taken by searches that do not end during the measurement.
        try runOnLoop(loop) { done in
            for typist in 0..<places { strategy.keystroke(typist, at: 0) }
            pollOnLoop(loop, until: { world.inBackend == places }, then: done)
        }
        let before = residentMiB()
        try runOnLoop(loop) { done in
            for typist in places..<(places + count) { strategy.keystroke(typist, at: 0) }
            pollOnLoop(loop, until: { strategy.waitingCount == count }, then: done)
        }
        let after = residentMiB()
        try runOnLoop(loop) { done in strategy.stop { done() } }
        var report = RunReport()
        report.add("impl", impl.rawValue)
        report.add("workload", "backend-waiting-memory")
        report.add("waiting", count)
        report.add("bytes_per_waiting_run", Int((after - before) * 1_048_576 / Double(count)))
        return report
    }
}

/// The simulated world of W9, on its loop: the typists' latest queries, the backend, and what
/// the answers took. Loop thread only.
final class BackendWorld: @unchecked Sendable {
    // @unchecked Sendable: reached only on its loop's thread (the actions and the driver's
    // timer run there), and read by the driver after the loop has stopped.
    let loop: UVLoop
    let places: Int
    let search: Duration
    /// Each typist's latest query (a number), when it was typed, and whether it was answered.
    var latestQuery: [Int]
    var latestAt: [UInt64]
    var answered: [Bool]
    var nextQuery = 0
    var unanswered = 0
    var calls = 0
    var wasted = 0
    var inBackend = 0
    var mostInBackend = 0
    var answers = 0
    /// The most searches seen waiting for a place (sampled every 256 keystrokes).
    var queuePeak = 0
    /// Resident memory (MiB) a third of the way through the typing.
    var residentAtThird = 0.0
    let latency = LatencyRecorder()
    /// Searches at the backend, by number: the timer of each one's reply, and its caller.
    private var inFlight: [Int: (UVTimer, CheckedContinuation<Void, Never>)] = [:]
    private var nextSearch = 0
    private var closed = false

    init(typists: Int, places: Int, searchMs: Int, loop: UVLoop) {
        self.loop = loop
        self.places = places
        search = .milliseconds(searchMs)
        latestQuery = Array(repeating: -1, count: typists)
        latestAt = Array(repeating: 0, count: typists)
        answered = Array(repeating: true, count: typists)
    }

    func noteQueueDepth(_ depth: Int) { queuePeak = max(queuePeak, depth) }

    /// A keystroke: the typist's new query.
    func type(_ typist: Int, at time: UInt64) -> Int {
        nextQuery += 1
        if answered[typist] { unanswered += 1 }
        latestQuery[typist] = nextQuery
        latestAt[typist] = time
        answered[typist] = false
        return nextQuery
    }

    /// The backend serving one search: a call for a query already replaced is wasted work.
    /// Once it has begun, the backend does the whole search, whether or not its caller is
    /// cancelled meanwhile (as a request already sent is served), and the caller holds its
    /// place until the reply.
    func serve(_ typist: Int, query: Int) async {
        if closed { return }  // the run is over: what the driver's teardown wakes is not counted
        calls += 1
        if latestQuery[typist] != query { wasted += 1 }
        inBackend += 1
        mostInBackend = max(mostInBackend, inBackend)
        defer { inBackend -= 1 }
        let loop = self.loop
        let search = self.search
        nextSearch += 1
        let number = nextSearch
        await withCheckedContinuation { (replied: CheckedContinuation<Void, Never>) in
            let timer = try! loop.makeUVTimer { [unowned self] in self.reply(number) }
            inFlight[number] = (timer, replied)
            try! timer.start(after: search)
        }
    }

    /// The backend's reply to search `number`: its caller resumes.
    private func reply(_ number: Int) {
        guard let (timer, replied) = inFlight.removeValue(forKey: number) else { return }
        timer.close()
        replied.resume()
    }

    /// Ends the run: every search still at the backend replies now, and no later call counts.
    func close() {
        closed = true
        for number in Array(inFlight.keys) { reply(number) }
    }

    /// An answer reached the typist: counted, with its latency, when it is for their latest query.
    func answer(_ typist: Int, query: Int) {
        guard latestQuery[typist] == query, !answered[typist] else { return }
        answered[typist] = true
        unanswered -= 1
        answers += 1
        latency.record(nanoseconds: monotonicNanoseconds() &- latestAt[typist])
    }
}

/// One way of running W9's searches. Loop thread only.
final class Runner: @unchecked Sendable {
    // @unchecked Sendable: reached only on its loop's thread (see `BackendWorld`).
    let impl: BackendBench.Strategy
    let world: BackendWorld
    let registry: TaskRegistry<Int>?
    let template: TypedTaskTemplate<Int, Int>?
    let limit: ConcurrencyLimit?
    let semaphore: BackendSemaphore
    var tasks: [Int: Task<Void, Never>] = [:]
    let live = LiveTasks()
    /// A registry impl's declaration, made once: calling the registry through this closure's
    /// captures spares a retain of the registry per keystroke (which, holding a weak reference's
    /// side table, takes the slow path: 4% of the run's CPU), as an app's own code would.
    var declare: ((Int, Int) -> Void)?

    init(_ impl: BackendBench.Strategy, world: BackendWorld, maxQueued: Int) throws {
        self.impl = impl
        self.world = world
        semaphore = BackendSemaphore(permits: world.places)
        switch impl {
        case .limit, .limitShed:
            let limit =
                impl == .limit
                ? try ConcurrencyLimit(maxRunning: world.places)
                : try ConcurrencyLimit(maxRunning: world.places, maxQueued: maxQueued)
            self.limit = limit
            registry = TaskRegistry<Int>(loop: world.loop)
            template = try TypedTaskTemplate<Int, Int>(limit: limit) { typist, query, context in
                await world.serve(typist, query: query)
                context.commit { world.answer(typist, query: query) }
            }
        case .registrySemaphore:
            limit = nil
            registry = TaskRegistry<Int>(loop: world.loop)
            let semaphore = self.semaphore
            template = try TypedTaskTemplate<Int, Int> { typist, query, context in
                try await semaphore.waitUnlessCancelled()
                defer { semaphore.signal() }
                await world.serve(typist, query: query)
                context.commit { world.answer(typist, query: query) }
            }
        case .tableWait, .tableCancellable:
            limit = nil
            registry = nil
            template = nil
        }
        if let registry, let template {
            declare = { typist, query in try! registry.task(typist, id: query, template: template) }
        }
    }

    /// A keystroke of `typist`, typed (as planned) at `time`.
    func keystroke(_ typist: Int, at time: UInt64) {
        let query = world.type(typist, at: time)
        if let declare {
            declare(typist, query)
            return
        }
        tasks[typist]?.cancel()
        let (world, semaphore, live) = (world, semaphore, live)
        let deaf = impl == .tableWait
        live.started()
        tasks[typist] = Task(executorPreference: world.loop) {
            defer { live.ended() }
            if deaf {
                await semaphore.wait()
            } else {
                do { try await semaphore.waitUnlessCancelled() } catch { return }
            }
            defer { semaphore.signal() }
            await world.serve(typist, query: query)
            if !Task.isCancelled { world.answer(typist, query: query) }
        }
    }

    /// Runs waiting for a place now (for the memory measurement).
    var waitingCount: Int {
        if let registry, let limit { return (try? registry.limitState(of: limit).queued) ?? 0 }
        return semaphore.waiting
    }

    /// The registry's counters, read by `stop` before it shuts the registry down.
    var finalCounters: RegistryCounters?

    /// Cancels everything and calls `done` on the loop once every run has ended.
    func stop(_ done: @escaping @Sendable () -> Void) {
        world.close()
        if let registry {
            finalCounters = try? registry.counters
            Task(executorPreference: world.loop) {
                await registry.shutdown()
                done()
            }
            return
        }
        for task in tasks.values { task.cancel() }
        tasks = [:]
        // A deaf waiter wakes only with a permit: hand out enough for every waiter.
        for _ in 0..<semaphore.waiting { semaphore.signal() }
        let live = self.live
        pollOnLoop(world.loop, until: { live.count == 0 }, then: done)
    }
}
