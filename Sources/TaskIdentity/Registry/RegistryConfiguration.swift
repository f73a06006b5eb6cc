#if Logging
    import Logging
#endif
#if Metrics
    import CoreMetrics
#endif
#if Tracing
    import Tracing
#endif

/// Every registry-wide setting, in one value: what `TaskRegistry(loop:configuration:)` and
/// `ShardedTaskRegistry(group:configuration:)` take. Per-task settings (debounce, priority,
/// executor, …) are options of each declaration instead.
///
/// ```swift
/// var configuration = RegistryConfiguration()
/// configuration.maxObservationDepth = 8
/// configuration.traceCapacity = 4_096      // record a trace from the start
/// let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
/// ```
///
/// A value type: may be made and passed on any thread.
public struct RegistryConfiguration: Sendable {
    /// How many runs a chain of observed runs may have after its first, each caused by the one
    /// before it, before the next re-evaluation is stopped as a cycle (see
    /// `ObservationCycleError`). At least 1; 100 by default.
    public var maxObservationDepth = 100

    /// The most calls from other threads that may wait for the loop at once; past it, a
    /// declaration, removal or control call from another thread throws
    /// `RegistryError.overloaded`. At least 1; 65,536 by default.
    public var postedCallLimit = 65_536

    /// A cap on the actions of this registry that run at once, for every task declared
    /// without a `limit:` of its own (a task declared with one counts against that one only).
    /// Runs past it wait in its queue (see `ConcurrencyLimit`). `nil` (the default): no cap.
    public var concurrencyLimit: ConcurrencyLimit?

    /// When set, the registry records a trace from its creation, keeping the latest
    /// `traceCapacity` events, as `startTrace(capacity:)` would (at least 1). `nil` (the
    /// default) records nothing until `startTrace` is called.
    public var traceCapacity: Int?
    /// Whether each run's Swift task carries a name (SE-0469), `"<task name> <key>#<generation>"`
    /// (`"main session-7#3"`), which debuggers, `swift-inspect` and crash logs show, and
    /// `Task.name` reads inside the action. Off by default: a name is a string made per run
    /// (docs/BENCHMARKS.md, "Named runs", measures it). Synchronous runs have no task to name.
    public var namesRuns = false

    /// The caller's own name for each run, from its slot's key and its identity (`NoIdentity`
    /// for a task declared without one); setting it names runs whatever `namesRuns` says.
    /// Called on the loop thread as each run starts; keep it cheap and free of side effects.
    public var runName: (@Sendable (_ key: any Hashable & Sendable, _ identity: any Hashable & Sendable) -> String)?

    /// How long runs under way may take to finish when the registry runs as a
    /// swift-service-lifecycle `Service` and the group shuts down gracefully
    /// (`shutdown(gracePeriod:)`); nil (the default): they are cancelled at once (`shutdown()`).
    public var shutdownGracePeriod: Duration?

    #if Logging
        /// Where the registry reports what it would otherwise swallow (a declaration dropped
        /// because its loop refused a timer, calls that could not reach a loop that has shut
        /// down, a run that failed), at `debug` and `trace` level only. `nil` (the default)
        /// logs nothing. Trait `Logging`.
        public var logger: Logger?
    #endif

    #if Metrics
        /// When set, the registry exports its counters to swift-metrics from its creation until
        /// its loop shuts down, as `exportMetrics(prefix:dimensions:every:factory:)` would
        /// (a sharded registry adds the dimension `shard` to each of its shards). `nil` (the
        /// default) exports nothing until `exportMetrics` is called. Trait `Metrics`.
        public var metrics: Metrics?

        /// How a registry exports its counters (see `RegistryMetricsExport`).
        ///
        /// A value type: may be made and passed on any thread.
        public struct Metrics: Sendable {
            /// The labels' prefix: `<prefix>_declared`, `<prefix>_live_slots`, …
            public var prefix: String
            /// The dimensions of every metric.
            public var dimensions: [(String, String)]
            /// How often the counters are exported; positive.
            public var interval: Duration
            /// Where the metrics go.
            public var factory: any MetricsFactory
            /// Whether to also record how long runs wait and last, and how late the loop runs
            /// (`<prefix>_time_to_start`, `<prefix>_run_duration`, `<prefix>_loop_lag`; see
            /// `TaskRegistry.exportMetrics`). Off by default: it costs a clock read per event
            /// the registry traces and two table updates per run.
            public var timers: Bool
            /// With `timers`, how often the loop-lag probe fires; positive.
            public var loopLagInterval: Duration

            /// An export as `TaskRegistry.exportMetrics` makes it, with the same defaults.
            ///
            /// May be called from any thread.
            public init(
                prefix: String = "taskidentity", dimensions: [(String, String)] = [],
                interval: Duration = .seconds(10), factory: any MetricsFactory = MetricsSystem.factory,
                timers: Bool = false, loopLagInterval: Duration = .milliseconds(100)
            ) {
                self.prefix = prefix
                self.dimensions = dimensions
                self.interval = interval
                self.factory = factory
                self.timers = timers
                self.loopLagInterval = loopLagInterval
            }
        }
    #endif

    #if Tracing
        /// The tracer that gets a span per run: its parent the trace context of the task that
        /// declared it, `ServiceContext.current` inside the action its own (see the README's
        /// "Package traits"). `nil` (the default): `InstrumentationSystem.tracer` as
        /// bootstrapped when the registry is made. With the no-op tracer nothing is recorded
        /// and nothing is captured. Trait `Tracing`.
        public var tracer: (any Tracer)?
    #endif

    /// Every setting at its default.
    ///
    /// May be called from any thread.
    public init() {}

    /// Checks every setting, so that a registry is never made from a value it cannot honour.
    ///
    /// - Throws: `RegistryError.invalidObservationDepth`, `.invalidPostedCallLimit`,
    ///   `.invalidTraceCapacity`, or `.invalidDuration` for a metrics interval that is not
    ///   positive.
    func validate() throws(RegistryError) {
        guard maxObservationDepth >= 1 else { throw .invalidObservationDepth(maxObservationDepth) }
        guard postedCallLimit >= 1 else { throw .invalidPostedCallLimit(postedCallLimit) }
        if let traceCapacity, traceCapacity < 1 { throw .invalidTraceCapacity(traceCapacity) }
        #if Metrics
            if let metrics, metrics.interval <= .zero { throw .invalidDuration(name: "interval", metrics.interval) }
            if let metrics, metrics.loopLagInterval <= .zero {
                throw .invalidDuration(name: "loopLagInterval", metrics.loopLagInterval)
            }
        #endif
    }

    /// The log the registry writes to: the logger, if any (trait `Logging`).
    var log: LibraryLog {
        #if Logging
            LibraryLog(logger: logger)
        #else
            LibraryLog()
        #endif
    }
}

extension RegistryConfiguration {
    /// The hook that hears about runs under this configuration: the runs' spans when the trait
    /// `Tracing` is on and a tracer records them, or none. Called once, by the registry's
    /// initializer.
    func makeRunHook() -> (any RunHook)? {
        #if Tracing
            return RunSpans.make(for: self)
        #else
            return nil
        #endif
    }
}
