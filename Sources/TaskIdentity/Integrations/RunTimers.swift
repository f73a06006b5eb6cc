#if Metrics
    import CoreMetrics

    /// How long runs wait and last, as swift-metrics timers (trait `Metrics`, an export made
    /// with `timers: true`):
    /// - `<prefix>_time_to_start`, dimension `task` (the task's name): from the declaration of a
    ///   generation to the start of its run, the time a debounce, a throttle, a limit's queue
    ///   or a previous run made it wait. A generation replaced before it started records
    ///   nothing; a retry's later attempts record nothing (they were declared once).
    /// - `<prefix>_run_duration`, dimensions `task` and `phase` (`finished`, `failed`,
    ///   `cancelled(identityChanged)`, …): from a run's start to its end, or to its
    ///   cancellation (what it cost before the registry gave up on it).
    ///
    /// Loop thread only: the core hands it the traced events.
    final class RunTimers: TraceEventSink {
        private let prefix: String
        private let dimensions: [(String, String)]
        private let factory: any MetricsFactory
        /// The latest declaration of each task still to start: its generation and time.
        private var declaredAt: [ObjectIdentifier: (generation: UInt64, time: UInt64)] = [:]
        /// The start of each run under way.
        private var startedAt: [RunKey: UInt64] = [:]
        private var timeToStart: [String: Timer] = [:]
        private var durations: [DurationKey: Timer] = [:]

        private struct DurationKey: Hashable {
            let task: String
            let phase: String
        }

        init(prefix: String, dimensions: [(String, String)], factory: any MetricsFactory) {
            self.prefix = prefix
            self.dimensions = dimensions
            self.factory = factory
        }

        func observe(_ kind: TraceEvent.Kind, _ record: AnyTaskRecord, _ generation: UInt64, at time: UInt64) {
            let id = ObjectIdentifier(record)
            switch kind {
            case .declared:
                declaredAt[id] = (generation, time)
            case .runStarted:
                if let declared = declaredAt[id], declared.generation == generation {
                    declaredAt[id] = nil
                    timeToStartTimer(record.name.rawValue).recordNanoseconds(Int64(time &- declared.time))
                }
                startedAt[RunKey(record: record, generation: generation)] = time
            case .cancelled(let reason, ofRun: true):
                ended(record, generation, phase: "cancelled(\(reason))", at: time)
            case .runEnded(let phase):
                // No phase: not the end of the generation. A cancelled run was recorded at its
                // cancellation, so this is an attempt that failed and waits for its retry.
                ended(record, generation, phase: phase.map { "\($0)" } ?? "failed", at: time)
            case .cancelled(let reason, ofRun: false):
                if reason != .identityChanged && reason != .supersededByPolicy { declaredAt[id] = nil }
            case .removed:
                declaredAt[id] = nil
            default:
                break
            }
        }

        private func ended(_ record: AnyTaskRecord, _ generation: UInt64, phase: String, at time: UInt64) {
            guard let start = startedAt.removeValue(forKey: RunKey(record: record, generation: generation)) else {
                return  // cancelled earlier: recorded then
            }
            let key = DurationKey(task: record.name.rawValue, phase: phase)
            let timer: Timer
            if let existing = durations[key] {
                timer = existing
            } else {
                timer = Timer(
                    label: "\(prefix)_run_duration", dimensions: dimensions + [("task", key.task), ("phase", phase)],
                    factory: factory)
                durations[key] = timer
            }
            timer.recordNanoseconds(Int64(time &- start))
        }

        private func timeToStartTimer(_ task: String) -> Timer {
            if let timer = timeToStart[task] { return timer }
            let timer = Timer(
                label: "\(prefix)_time_to_start", dimensions: dimensions + [("task", task)], factory: factory)
            timeToStart[task] = timer
            return timer
        }
    }
#endif
