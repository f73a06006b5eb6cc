import TaskLoopCore

/// Yesterday's traffic with tomorrow's settings: a recorded trace's declarations (every new
/// identity of every task, at its recorded time) declared again on a `TestLoop` registry, in
/// virtual time, under settings of your choosing, with each run modelled as a backend call of
/// a known duration. It answers what `debounce:`, `throttle:`, `maxWait:` or a concurrency
/// limit would have done to the backend calls, the wasted ones and the time to each answer,
/// before you deploy them. `taskid replay` is its command-line form (docs/REPLAY.md).
///
/// ```swift
/// let replay = try TraceReplay(json: String(decoding: data, as: UTF8.self))
/// var settings = replay.recordedSettings
/// settings.debounce *= 2
/// let figures = try replay.replay(with: settings)
/// print(replay.recordedFigures, try replay.replay(with: replay.recordedSettings), figures)
/// ```
///
/// A value: may be made and passed on any thread; `replay(with:)` runs on the calling thread.
public struct TraceReplay: Sendable {
    /// One new identity of one task, as recorded.
    ///
    /// A value: may be used on any thread.
    public struct Declaration: Sendable, Hashable {
        /// Loop time, in nanoseconds (the trace's clock).
        public var time: UInt64
        /// The task's label: its slot key, or `key/name` for a task other than `main`.
        public var task: String
        /// The identity, as the trace describes it. `nil`: the slot was removed at `time`.
        public var identity: String?

        /// A declaration (or, with no identity, a removal). May be called from any thread.
        public init(time: UInt64, task: String, identity: String?) {
            self.time = time
            self.task = task
            self.identity = identity
        }
    }

    /// How long each replayed run's backend call takes.
    ///
    /// A value: may be used on any thread.
    public enum Backend: Sendable, Hashable {
        /// Every call takes this long.
        case fixed(Duration)
        /// Each call takes what the same identity's run took in the trace (a run cut short
        /// there takes at least what it had run, and at least the trace's median); an identity
        /// that never ran takes the median of the trace's finished runs.
        case recorded
    }

    /// The settings of one replay: what every task is declared with.
    ///
    /// A value: may be used on any thread.
    public struct Settings: Sendable, Hashable, CustomStringConvertible {
        /// Every task's `debounce:` (zero: none).
        public var debounce: Duration
        /// Every task's `throttle:` (zero: none).
        public var throttle: Duration
        /// Every task's `maxWait:`; nil: no bound on a debounce window that keeps re-opening.
        public var maxWait: Duration?
        /// The most runs at once (one `ConcurrencyLimit` for every task); nil: no limit.
        public var maxRunning: Int?
        /// How long each run's backend call takes.
        public var backend: Backend

        /// Settings; every value at "none" by default. May be called from any thread.
        public init(
            debounce: Duration = .zero, throttle: Duration = .zero, maxWait: Duration? = nil, maxRunning: Int? = nil,
            backend: Backend = .recorded
        ) {
            self.debounce = debounce
            self.throttle = throttle
            self.maxWait = maxWait
            self.maxRunning = maxRunning
            self.backend = backend
        }

        /// `debounce 50 ms, throttle 0 ms, max-wait none, limit none, backend recorded`. Any thread.
        public var description: String {
            let backendText: String
            switch backend {
            case .fixed(let duration): backendText = "\(milliseconds(duration)) ms"
            case .recorded: backendText = "recorded"
            }
            return "debounce \(milliseconds(debounce)) ms, throttle \(milliseconds(throttle)) ms, max-wait "
                + (maxWait.map { "\(milliseconds($0)) ms" } ?? "none") + ", limit "
                + (maxRunning.map(String.init) ?? "none") + ", backend \(backendText)"
        }
    }

    /// What the runs of a trace, or of a replay, came to (each field: see docs/REPLAY.md's rows).
    ///
    /// A value: may be used on any thread.
    public struct Figures: Sendable, Hashable {
        /// New identities declared (declarations of an equal identity change nothing and are
        /// not traced).
        public var declarations: Int
        /// Runs started: calls to the backend.
        public var backendCalls: Int
        /// Runs that finished with their identity still current: answers delivered.
        public var answers: Int
        /// Runs whose result was stale or never came (cancelled, failed, or superseded):
        /// `backendCalls - answers`.
        public var wastedCalls: Int
        /// Time from a task's move to an identity to that identity's answer, over the answers:
        /// the median (nearest rank; zero with no answer).
        public var answerP50: Duration
        /// The same time's 99th percentile (nearest rank; zero with no answer).
        public var answerP99: Duration
        /// The most runs under way at once.
        public var peakRunning: Int
        /// From the first event to the last, in the trace's time.
        public var span: Duration
    }

    /// The declarations and removals to replay, in time order.
    public let declarations: [Declaration]
    /// The settings the trace shows (see `recordedSettings`): its debounce and throttle, and
    /// its limit where runs waited in a queue; `maxWait` is not in a trace.
    public let recordedSettings: Settings
    /// The trace's own figures, as its runs went.
    public let recordedFigures: Figures
    /// How late the recorded loop closed its windows after their deadlines (the median; zero
    /// for a trace recorded in virtual time). A replay closes every debounce and throttle
    /// window this much later than its setting says, as the recorded loop would have: a live
    /// loop's timers fire late by about a millisecond (libuv counts in milliseconds), and a
    /// letter that came in that millisecond restarted no run there.
    public let recordedTimerLateness: Duration
    private let measured: [String: UInt64]
    private let atLeast: [String: UInt64]
    private let medianRun: UInt64

    /// A replay of `trace` (`TaskRegistry.stopTrace()`, `RegistryTrace(merging:)`). May be
    /// called from any thread.
    public init(trace: RegistryTrace) {
        self.init(ledger: TraceLedger(events: trace.events))
    }

    /// A replay of a trace in Trace Event JSON, as `RegistryTrace.json()`, `TASK.TRACE DUMP` and
    /// `taskid serve --trace FILE` write it. May be called from any thread.
    ///
    /// - Throws: `TraceReplayError` for text that is not such a trace (with the byte offset of
    ///   the fault), or a trace with no declaration.
    public init(json: String) throws(TraceReplayError) {
        var ledger = try TraceJSONReader.ledger(from: json)
        ledger.sort()
        self.init(ledger: ledger)
        guard !declarations.isEmpty else {
            throw TraceReplayError(message: "the trace holds no declaration", offset: nil)
        }
    }

    init(ledger: TraceLedger) {
        var declarations: [Declaration] = []
        for entry in ledger.entries {
            switch entry.fact {
            case .declared(_, let identity):
                declarations.append(Declaration(time: entry.time, task: entry.track, identity: identity))
            case .removed:
                declarations.append(Declaration(time: entry.time, task: entry.track, identity: nil))
            default: break
            }
        }
        self.declarations = declarations
        let durations = ledger.runDurations()
        measured = durations.measured
        atLeast = durations.atLeast
        medianRun = durations.median
        recordedSettings = ledger.recordedSettings(backend: .recorded)
        recordedFigures = ledger.figures()
        recordedTimerLateness = .nanoseconds(Int64(clamping: ledger.timerLateness()))
    }

    /// The backend time of a run of `identity` on `task` under `backend`.
    func backendTime(task: String, identity: String, _ backend: Backend) -> UInt64 {
        switch backend {
        case .fixed(let duration):
            return UInt64(max(0, duration.clampedNanoseconds))
        case .recorded:
            let key = Self.durationKey(track: task, identity: identity)
            if let measured = measured[key] { return measured }
            // Saturating: the times come from a file.
            let longer = atLeast[key].map { $0.addingReportingOverflow(1_000_000).overflow ? .max : $0 + 1_000_000 }
            return max(longer ?? 0, medianRun)
        }
    }

    static func durationKey(track: String, identity: String) -> String { track + "\u{1F}" + identity }
}

/// A trace that `TraceReplay(json:)` cannot read.
///
/// A value: may be used on any thread.
public struct TraceReplayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// The byte offset in the text where reading stopped, when it is a fault of the text.
    public let offset: Int?

    /// `message at byte N`. Any thread.
    public var description: String { offset.map { "\(message) at byte \($0)" } ?? message }
}

private func milliseconds(_ duration: Duration) -> String {
    let nanoseconds = duration.clampedNanoseconds
    if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000)" }
    return String(Double(nanoseconds) / 1e6)
}
