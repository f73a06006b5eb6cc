/// What a replay needs of a trace, whichever form it came in (a `RegistryTrace`'s events or
/// its Trace Event JSON): the declarations and removals to replay, the runs as they went, and
/// the figures and settings they show. One reading of both forms, so that a trace and its
/// replay are measured by the same rules.
///
/// A value; built and read on one thread.
struct TraceLedger {
    /// One fact of a trace, on a task's track (its label: the key, or `key/name`).
    enum Fact {
        case declared(generation: UInt64, identity: String)
        case removed
        case windowOpened(TraceEvent.Window, generation: UInt64, until: UInt64)
        /// The task's debounce or throttle window closed (its timer fired, or it gave way).
        case windowClosed
        case queued
        case runStarted(generation: UInt64)
        /// The run's span closed: it finished (`finished`), or was cancelled, failed, or was
        /// still running when the trace ended.
        case runClosed(generation: UInt64, finished: Bool)
        case commitDropped(generation: UInt64)
    }

    struct Entry {
        let time: UInt64
        let track: String
        let fact: Fact
    }

    private(set) var entries: [Entry] = []

    mutating func add(_ time: UInt64, _ track: String, _ fact: Fact) {
        entries.append(Entry(time: time, track: track, fact: fact))
    }

    /// The entries in time order (a span is written when it closes, after later events); stable.
    mutating func sort() {
        entries = entries.enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(
            \.element)
    }

    /// Reads a registry's own events.
    init(events: [TraceEvent]) {
        for event in events {
            let track = event.task
            let generation = event.generation
            switch event.kind {
            case .declared(let identity):
                add(
                    event.time, track,
                    .declared(generation: generation, identity: TraceEvent.describe(identity: identity)))
            case .removed: add(event.time, track, .removed)
            case .windowOpened(let window, let until):
                add(event.time, track, .windowOpened(window, generation: generation, until: until))
            case .windowClosed(.debounce), .windowClosed(.throttle): add(event.time, track, .windowClosed)
            case .queued: add(event.time, track, .queued)
            case .runStarted: add(event.time, track, .runStarted(generation: generation))
            case .cancelled(_, ofRun: true): add(event.time, track, .runClosed(generation: generation, finished: false))
            case .runEnded(let phase?):
                add(event.time, track, .runClosed(generation: generation, finished: phase == .finished))
            case .commitDropped: add(event.time, track, .commitDropped(generation: generation))
            default: break
            }
        }
        sort()
    }

    init() {}
}

extension TraceLedger {
    /// The figures of the runs in the ledger (see `TraceReplay.Figures`).
    func figures() -> TraceReplay.Figures {
        var declaredAt: [String: [UInt64: UInt64]] = [:]
        var open: [String: (generation: UInt64, start: UInt64)] = [:]
        var stale: Set<RunID> = []
        var closes: [(track: String, generation: UInt64, start: UInt64, end: UInt64, finished: Bool)] = []
        var starts = 0
        var declarations = 0
        for entry in entries {
            switch entry.fact {
            case .declared(let generation, _):
                declarations += 1
                declaredAt[entry.track, default: [:]][generation] = entry.time
            case .runStarted(let generation):
                starts += 1
                if let unclosed = open[entry.track] {
                    closes.append((entry.track, unclosed.generation, unclosed.start, entry.time, false))
                }
                open[entry.track] = (generation, entry.time)
            case .runClosed(let generation, let finished):
                guard let run = open[entry.track], run.generation == generation else { continue }
                open[entry.track] = nil
                closes.append((entry.track, generation, run.start, entry.time, finished))
            case .commitDropped(let generation):
                stale.insert(RunID(track: entry.track, generation: generation))
            case .removed, .windowOpened, .windowClosed, .queued:
                break
            }
        }
        var latencies: [UInt64] = []
        for run in closes where run.finished && !stale.contains(RunID(track: run.track, generation: run.generation)) {
            let declared = declaredAt[run.track]?[run.generation] ?? run.start
            latencies.append(run.end &- min(declared, run.end))
        }
        latencies.sort()
        let span = (entries.last?.time ?? 0) &- (entries.first?.time ?? 0)
        // Runs under way at once: a run that ends at the time another starts does not overlap
        // it, whichever the trace wrote first (its events, or its JSON's spans, written at
        // their ends), so the two forms of one trace agree.
        var edges = closes.flatMap { [($0.start, 1), ($0.end, -1)] } + open.values.map { ($0.start, 1) }
        edges.sort { ($0.0, $0.1) < ($1.0, $1.1) }
        var running = 0
        var peak = 0
        for (_, change) in edges {
            running += change
            peak = max(peak, running)
        }
        return TraceReplay.Figures(
            declarations: declarations, backendCalls: starts, answers: latencies.count,
            wastedCalls: starts - latencies.count, answerP50: Self.percentile(latencies, 0.50),
            answerP99: Self.percentile(latencies, 0.99), peakRunning: peak, span: .nanoseconds(Int64(clamping: span)))
    }

    private struct RunID: Hashable {
        let track: String
        let generation: UInt64
    }

    /// The nearest-rank percentile of sorted `values`, as a duration; zero for none.
    static func percentile(_ values: [UInt64], _ fraction: Double) -> Duration {
        guard !values.isEmpty else { return .zero }
        let rank = Int((fraction * Double(values.count)).rounded(.up))
        return .nanoseconds(Int64(clamping: values[min(max(rank, 1), values.count) - 1]))
    }

    /// The settings the trace shows: its debounce (each window from its declaration to its
    /// `until`), its throttle (a window's `until` less the track's last start), and, where runs
    /// waited in a queue, the most runs at once. Each the median of what it shows, to the
    /// millisecond; `maxWait` cannot be read from a trace and is nil.
    func recordedSettings(backend: TraceReplay.Backend) -> TraceReplay.Settings {
        var declaredAt: [String: UInt64] = [:]
        var lastStart: [String: UInt64] = [:]
        var debounces: [UInt64] = []
        var throttles: [UInt64] = []
        var queued = false
        for entry in entries {
            switch entry.fact {
            case .declared: declaredAt[entry.track] = entry.time
            case .runStarted: lastStart[entry.track] = entry.time
            case .windowOpened(.debounce, _, let until):
                if let declared = declaredAt[entry.track], until >= declared { debounces.append(until - declared) }
            case .windowOpened(.throttle, _, let until):
                if let start = lastStart[entry.track], until >= start { throttles.append(until - start) }
            case .queued: queued = true
            default: break
            }
        }
        return TraceReplay.Settings(
            debounce: Self.medianMilliseconds(debounces), throttle: Self.medianMilliseconds(throttles),
            maxWait: nil, maxRunning: queued ? figures().peakRunning : nil, backend: backend)
    }

    /// How late the trace's loop closed a window after its deadline: the median over the windows
    /// closed by their timer (a live loop's timers fire late by a little: libuv counts in
    /// milliseconds). Zero for a trace recorded in virtual time, or with no window.
    func timerLateness() -> UInt64 {
        var until: [String: UInt64] = [:]
        var lateness: [UInt64] = []
        for entry in entries {
            switch entry.fact {
            case .windowOpened(_, _, let deadline): until[entry.track] = deadline
            case .windowClosed:
                // Closed before its deadline: it gave way (a new identity, a cancellation).
                if let deadline = until.removeValue(forKey: entry.track), entry.time >= deadline {
                    lateness.append(entry.time - deadline)
                }
            default: break
            }
        }
        guard !lateness.isEmpty else { return 0 }
        return lateness.sorted()[lateness.count / 2]
    }

    private static func medianMilliseconds(_ values: [UInt64]) -> Duration {
        guard !values.isEmpty else { return .zero }
        let median = values.sorted()[values.count / 2]
        return .milliseconds(Int64((Double(median) / 1e6).rounded()))
    }

    /// How long each identity's run took on each track, where the trace shows it: a finished
    /// run's span, or, for a run cut short, at least its span (a lower bound).
    func runDurations() -> (measured: [String: UInt64], atLeast: [String: UInt64], median: UInt64) {
        var identityOf: [String: [UInt64: String]] = [:]
        var open: [String: (generation: UInt64, start: UInt64)] = [:]
        var measured: [String: UInt64] = [:]
        var atLeast: [String: UInt64] = [:]
        for entry in entries {
            switch entry.fact {
            case .declared(let generation, let identity): identityOf[entry.track, default: [:]][generation] = identity
            case .runStarted(let generation): open[entry.track] = (generation, entry.time)
            case .runClosed(let generation, let finished):
                guard let run = open[entry.track], run.generation == generation else { continue }
                open[entry.track] = nil
                let identity = identityOf[entry.track]?[generation] ?? ""
                let key = TraceReplay.durationKey(track: entry.track, identity: identity)
                // A span from a file may end before it starts (a time past 2^64 ns wraps).
                let length = entry.time >= run.start ? entry.time - run.start : 0
                if finished {
                    measured[key] = length
                } else {
                    atLeast[key] = max(atLeast[key] ?? 0, length)
                }
            default: break
            }
        }
        let sorted = measured.values.sorted()
        return (measured, atLeast, sorted.isEmpty ? 0 : sorted[sorted.count / 2])
    }
}
