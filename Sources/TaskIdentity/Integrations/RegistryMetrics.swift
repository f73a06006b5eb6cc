#if Metrics
    import CoreMetrics
    import TaskLoopCore

    /// A registry's counters exported as swift-metrics: every field of
    /// `RegistryCounters.fields` under `<prefix>_<name>`, a `Counter` for the fields that only
    /// grow (incremented by what they grew since the last export) and a `Gauge` for the levels
    /// (live slots, running actions, live generations). Made by `TaskRegistry.exportMetrics`.
    ///
    /// The export runs on the registry's loop thread, on a loop timer, every `interval`;
    /// `stop()` ends it after one last export, and the loop's shutdown closes its timer. Reading the counters there
    /// costs nothing on the declaration path.
    ///
    /// Made with `timers: true`, it also records, as they happen, how long runs wait and last
    /// (`<prefix>_time_to_start` by task, `<prefix>_run_duration` by task and final phase: see
    /// the README's "Package traits") and how late the loop runs: `<prefix>_loop_lag`, a timer
    /// (a histogram in Prometheus) of how late a probe timer armed every `loopLagInterval`
    /// fires, which is how long any timer or job of the loop waits behind the work ahead of it.
    /// Those cost a clock read per event the registry traces (a declaration, a start, an end,
    /// …) and two table updates per run.
    ///
    /// `Sendable`: its state is loop-confined in a `LoopBound`, checked on each access.
    public final class RegistryMetricsExport: Sendable {
        private let state: LoopBound<ExportState>

        /// The metric objects and what was exported last. Loop thread only.
        private final class ExportState {
            let read: @Sendable () -> RegistryCounters?
            let counters: [(field: RegistryCounters.Field, metric: Counter)]
            let gauges: [(field: RegistryCounters.Field, metric: Gauge)]
            var last = RegistryCounters()
            var timer: (any LoopTimer)?
            let interval: Duration
            /// With `timers: true`: the loop-lag probe, its metric and its interval.
            var lagProbe: (any LoopTimer)?
            var lagDeadline: UInt64 = 0
            var lag: Timer?
            var lagInterval: Duration = .zero

            init(
                read: @escaping @Sendable () -> RegistryCounters?, prefix: String, dimensions: [(String, String)],
                factory: any MetricsFactory, interval: Duration
            ) {
                self.read = read
                self.interval = interval
                var counters: [(RegistryCounters.Field, Counter)] = []
                var gauges: [(RegistryCounters.Field, Gauge)] = []
                for field in RegistryCounters.fields {
                    let label = "\(prefix)_\(field.name)"
                    switch field.kind {
                    case .counter:
                        counters.append((field, Counter(label: label, dimensions: dimensions, factory: factory)))
                    case .gauge:
                        gauges.append((field, Gauge(label: label, dimensions: dimensions, factory: factory)))
                    }
                }
                self.counters = counters
                self.gauges = gauges
            }

            func export() {
                guard let now = read() else { return }
                for (field, metric) in counters {
                    let grown = field.value(now) &- field.value(last)
                    if grown > 0 { metric.increment(by: grown) }
                }
                for (field, metric) in gauges { metric.record(field.value(now)) }
                last = now
            }

            /// Arms the lag probe for `lagInterval` after `now`. Refused only while the loop
            /// shuts down, which ends the export.
            func armLagProbe(now: UInt64) {
                lagDeadline = LoopInstant.nanoseconds(now, plus: UInt64(lagInterval.clampedNanoseconds))
                try? lagProbe?.start(at: LoopInstant(nanoseconds: lagDeadline))
            }

            func closeTimers() {
                timer?.close()
                timer = nil
                lagProbe?.close()
                lagProbe = nil
            }
        }

        /// The core whose run timers this export made, if it made them. Weak: the export may
        /// outlive its registry. Loop thread only (read in `stop`, on the loop).
        private let timedCore: LoopBound<WeakCore>

        private final class WeakCore {
            weak var core: RegistryCore?
            /// The timers this export gave the core: another export's replace them, and are
            /// not this one's to remove.
            var timers: RunTimers?
        }

        fileprivate init(
            core: RegistryCore, read: @escaping @Sendable () -> RegistryCounters?, loop: any TaskLoop, prefix: String,
            dimensions: [(String, String)], factory: any MetricsFactory, interval: Duration, timers: Bool,
            loopLagInterval: Duration
        ) throws(LoopError) {
            let bound = LoopBound(
                ExportState(read: read, prefix: prefix, dimensions: dimensions, factory: factory, interval: interval),
                loop: loop)
            self.state = bound
            let timedCore = LoopBound(WeakCore(), loop: loop)
            self.timedCore = timedCore
            // The timer reaches the state weakly: a dropped export stops exporting.
            let timer = try loop.makeTimer { [weak bound] in
                guard let state = bound?.value else { return }
                state.export()
                try? state.timer?.start(after: state.interval)  // refused only while shutting down
            }
            bound.value.timer = timer
            try timer.start(after: interval)
            guard timers else { return }
            let state = bound.value
            state.lag = Timer(label: "\(prefix)_loop_lag", dimensions: dimensions, factory: factory)
            state.lagInterval = loopLagInterval
            let probe = try loop.makeTimer { [weak bound] in
                guard let state = bound?.value else { return }
                let now = loop.now.nanoseconds
                state.lag?.recordNanoseconds(Int64(now &- min(now, state.lagDeadline)))
                state.armLagProbe(now: now)
            }
            state.lagProbe = probe
            state.armLagProbe(now: loop.now.nanoseconds)
            let runTimers = RunTimers(prefix: prefix, dimensions: dimensions, factory: factory)
            timedCore.value.core = core
            timedCore.value.timers = runTimers
            core.useRunTimers(runTimers)
            core.traceSinksChanged()
        }

        deinit {
            // Dropped without `stop()`: its timer must still be closed, on the loop thread.
            let state = self.state
            let timedCore = self.timedCore
            if state.loop.inLoop {
                state.value.closeTimers()
                Self.removeRunTimers(timedCore.value)
            } else {
                do {
                    try state.loop.execute {
                        state.value.closeTimers()
                        Self.removeRunTimers(timedCore.value)
                    }
                } catch {
                    // The loop is shutting down and closes the timer itself; releasing it here
                    // would free a loop handle off the loop thread. Keep it: this Unmanaged retain
                    // is never balanced, on purpose (one small object, at most once per export).
                    _ = Unmanaged.passRetained(state)
                }
            }
        }

        /// Exports the counters now, between the timer's exports.
        ///
        /// - Note: Loop thread only (traps elsewhere: `LoopBound`).
        public func exportNow() { state.value.export() }

        /// Stops the periodic export (after one last one) and closes its timer. Idempotent.
        ///
        /// - Note: Loop thread only (traps elsewhere: `LoopBound`).
        public func stop() {
            let state = state.value
            guard state.timer != nil else { return }
            state.export()
            state.closeTimers()
            Self.removeRunTimers(timedCore.value)
        }

        /// The run timers this export made stop hearing of runs. Loop thread only.
        private static func removeRunTimers(_ timed: WeakCore) {
            guard let core = timed.core, let timers = timed.timers else { return }
            timed.core = nil
            timed.timers = nil
            guard core.integrations.runTimers === timers else { return }  // replaced by a later export's
            core.useRunTimers(nil)
            core.traceSinksChanged()
        }
    }

    extension TaskRegistry {
        /// Exports this registry's counters to swift-metrics every `interval` (see
        /// `RegistryMetricsExport`), as `<prefix>_declared`, `<prefix>_live_slots`, … with
        /// `dimensions`, through `factory` (the bootstrapped `MetricsSystem.factory` by
        /// default). Keep the returned export: dropping it stops the export.
        ///
        /// With `timers`, it also records `<prefix>_time_to_start`, `<prefix>_run_duration`
        /// and `<prefix>_loop_lag` (a probe every `loopLagInterval`) as swift-metrics timers.
        /// One export per registry should ask for them: a second replaces the first's (and
        /// stopping the first then leaves the second's alone).
        ///
        /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread;
        ///   `RegistryError.invalidDuration` for an interval or a `loopLagInterval` that is not
        ///   positive;
        ///   `RegistryError.shutDown` when the loop has shut down and refuses a timer, and
        ///   `.loopFailed` when libuv fails to create one (each keeps the loop's error in
        ///   `loopError`).
        /// - Note: Loop thread only (its timer lives there).
        public func exportMetrics(
            prefix: String = "taskidentity", dimensions: [(String, String)] = [],
            every interval: Duration = .seconds(10), factory: any MetricsFactory = MetricsSystem.factory,
            timers: Bool = false, loopLagInterval: Duration = .milliseconds(100)
        ) throws(RegistryError) -> RegistryMetricsExport {
            guard loop.inLoop else { throw .calledOffLoopThread }
            guard interval > .zero else { throw .invalidDuration(name: "interval", interval) }
            guard loopLagInterval > .zero else { throw .invalidDuration(name: "loopLagInterval", loopLagInterval) }
            do {
                return try RegistryMetricsExport(
                    core: core, read: { [weak self] in self?.core.counters }, loop: loop, prefix: prefix,
                    dimensions: dimensions, factory: factory, interval: interval, timers: timers,
                    loopLagInterval: loopLagInterval)
            } catch {
                throw RegistryError(loopRefused: error)
            }
        }
    }

    extension TaskRegistry {
        /// Starts the export `configuration.metrics` asks for, on the loop thread; the registry
        /// keeps it until its loop shuts down. A loop that refuses the timer is logged: the
        /// registry works without its metrics. May be called from any thread.
        func startConfiguredExports() {
            guard let options = configuration.metrics else { return }
            let start: @Sendable () -> Void = { [weak self] in
                guard let self else { return }
                do {
                    let export = try self.exportMetrics(
                        prefix: options.prefix, dimensions: options.dimensions, every: options.interval,
                        factory: options.factory, timers: options.timers, loopLagInterval: options.loopLagInterval)
                    self.core.keepMetricsExport(export)
                } catch {
                    self.core.logDebug("the configured metrics export could not start: \(error)")
                }
            }
            if loop.inLoop { return start() }
            // A loop that has not started takes jobs, not closures: this one runs on its thread
            // once it starts.
            if !loop.hasStarted {
                Task(executorPreference: loop) { start() }
                return
            }
            do { try loop.execute(start) } catch {
                core.logDebug("the configured metrics export could not start: \(error)")
            }
        }
    }
#else
    extension TaskRegistry {
        /// Without the `Metrics` trait there is nothing to export.
        func startConfiguredExports() {}
    }
#endif
