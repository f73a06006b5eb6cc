#if Tracing
    import Tracing

    /// A span per run (trait `Tracing`), so that what a run does appears in the trace of the
    /// request that declared it, as swift-distributed-tracing's instrumented libraries expect.
    ///
    /// - The parent of a run's span is the `ServiceContext` of the task that declared its
    ///   generation, captured at the declaration (also when it is posted from another thread).
    ///   The declarations a debounce, a throttle or a limit's queue merged into the run are
    ///   links of its span.
    /// - Inside the action, and its child tasks, `ServiceContext.current` is the span's.
    /// - A cancellation is an event with its typed reason (never an error status); a failure is
    ///   an error; a finished run's status is `ok`. A stale commit dropped and a shared run
    ///   joined are events.
    /// - Each attempt of a retried run is a span of its own, attribute `task.attempt`.
    ///
    /// Loop thread only: held by the loop-confined core, which calls it where a run starts
    /// and ends and, through its trace recorder, at each traced event.
    @usableFromInline
    final class RunSpans: TraceEventSink {
        /// Where the spans go (a registry whose tracer is the no-op one has no `RunSpans`).
        let tracer: any Tracer
        /// The most declarations a run's span links to (the latest ones): a key declared again
        /// and again inside a long debounce must not grow a span without bound.
        static let maxLinks = 32

        /// A run's open span.
        private struct OpenSpan {
            let span: any Span
            /// Whether its run is a synchronous one waiting for its delay: a cancelled one
            /// never ends through `runEnded`, so its span ends with the cancellation.
            let isQueuedSynchronous: Bool
            /// The registry cancelled the run: however its action ends (returning, throwing
            /// `CancellationError` or anything else), the run ends cancelled, as its phase
            /// says.
            var cancelled = false
        }

        /// The declarations of a task's latest generation (and of those it replaced before any
        /// of them started): the last is the parent of its runs, the others their links.
        private struct Declarations {
            var generation: UInt64
            var contexts: [ServiceContext]
            /// A run of `generation` started: a newer generation starts a new list.
            var started = false
        }

        /// The trace context of the declaration being applied: set by the registry around
        /// it, read when its new generation is traced (`.declared`).
        @usableFromInline var declarationContext: ServiceContext?
        private var open: [RunKey: OpenSpan] = [:]
        private var declarations: [ObjectIdentifier: Declarations] = [:]

        init(tracer: any Tracer) {
            self.tracer = tracer
        }

        /// The tracer a registry made with `configuration` traces to: its `tracer`, or the
        /// bootstrapped one; nil when that is the no-op tracer (nothing would be recorded, so
        /// nothing is paid for). Any thread.
        static func make(for configuration: RegistryConfiguration) -> RunSpans? {
            let tracer = configuration.tracer ?? InstrumentationSystem.tracer
            return tracer is NoOpTracer ? nil : RunSpans(tracer: tracer)
        }

        /// A new generation of `record` was declared, by a task whose context was `context`
        /// (nil: declared where no trace context was bound, or by an observed change).
        func declared(_ record: AnyTaskRecord, generation: UInt64, context: ServiceContext?) {
            let id = ObjectIdentifier(record)
            if var list = declarations[id], !list.started {
                // The generation it held never started: the new one takes its declarations.
                list.generation = generation
                if let context { list.contexts.append(context) }
                if list.contexts.count > Self.maxLinks + 1 { list.contexts.removeFirst() }
                declarations[id] = list
            } else if let context {
                declarations[id] = Declarations(generation: generation, contexts: [context])
            } else {
                declarations[id] = nil
            }
        }

        /// Starts the span of the run of `record`'s `generation` that is starting now, and
        /// returns the context its action runs in.
        func runStarting(
            _ record: AnyTaskRecord, generation: UInt64, attempt: Int?, isQueuedSynchronous: Bool
        ) -> ServiceContext {
            let id = ObjectIdentifier(record)
            var contexts: [ServiceContext] = []
            if var list = declarations[id], list.generation == generation {
                contexts = list.contexts
                list.started = true
                declarations[id] = list
            }
            let parent = contexts.last ?? .topLevel
            let span = tracer.startAnySpan(
                "\(type(of: record.traceKey))/\(record.name)", context: parent, ofKind: .internal)
            for merged in contexts.dropLast() {
                span.addLink(SpanLink(context: merged, attributes: ["task.link": "merged declaration"]))
            }
            span.updateAttributes { attributes in
                attributes["task.key"] = "\(record.traceKey)"
                attributes["task.name"] = record.name.rawValue
                attributes["task.identity"] = TraceEvent.describe(identity: record.identity)
                attributes["task.generation"] = Int64(truncatingIfNeeded: generation)
                attributes["task.executor"] = "\(record.options.values.executor)"
                if let attempt { attributes["task.attempt"] = attempt }
                if contexts.count > 1 { attributes["task.merged_declarations"] = contexts.count - 1 }
            }
            open[RunKey(record: record, generation: generation)] = OpenSpan(
                span: span, isQueuedSynchronous: isQueuedSynchronous)
            return span.context
        }

        /// The run of `record`'s `generation` ended: its action returned (`failure` is what it
        /// threw) or, synchronous, was called. `phase` is the task's phase now, if this run
        /// was its current one.
        @usableFromInline func runEnded(
            _ record: AnyTaskRecord, generation: UInt64, failure: (any Error)?, phase: TaskStateMachine.Phase?
        ) {
            guard let entry = open.removeValue(forKey: RunKey(record: record, generation: generation)) else { return }
            let span = entry.span
            // Cancelled by the registry: the event set the phase, with its reason, whatever
            // the action did after.
            guard !entry.cancelled else {
                span.end()
                return
            }
            switch failure {
            case nil:
                if let phase { span.attributes["task.phase"] = "\(phase)" }
                span.setStatus(SpanStatus(code: .ok))
            case is CancellationError:
                // The action cancelled itself (its own task, or a child's cancellation it let through).
                span.attributes["task.phase"] = phase.map { "\($0)" } ?? "cancelled"
            case .some(let error):
                span.attributes["task.phase"] = "failed"
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error, message: "\(error)"))
            }
            span.end()
        }

        /// The context of the open span of `record`'s run `generation`, if it has one: what a
        /// queued synchronous run is called in when its delay has passed.
        func context(of record: AnyTaskRecord, generation: UInt64) -> ServiceContext? {
            open[RunKey(record: record, generation: generation)]?.span.context
        }

        /// One traced event of `record`'s `generation` (see `RegistryCore.trace`).
        func observe(_ kind: TraceEvent.Kind, _ record: AnyTaskRecord, _ generation: UInt64, at time: UInt64) {
            switch kind {
            case .declared:
                declared(record, generation: generation, context: declarationContext)
            case .cancelled(let reason, ofRun: true):
                let key = RunKey(record: record, generation: generation)
                guard let entry = open[key] else { return }
                entry.span.addEvent(SpanEvent(name: "cancelled", attributes: ["task.cancellation_reason": "\(reason)"]))
                entry.span.attributes["task.phase"] = "cancelled(\(reason))"
                if entry.isQueuedSynchronous {
                    entry.span.end()
                    open[key] = nil
                } else {
                    open[key]?.cancelled = true
                }
            case .cancelled(let reason, ofRun: false):
                // Replaced by a newer declaration, it is merged into the next run; dropped
                // otherwise, its declarations are nobody's parent.
                if reason != .identityChanged && reason != .supersededByPolicy {
                    declarations[ObjectIdentifier(record)] = nil
                }
            case .commitDropped:
                open[RunKey(record: record, generation: generation)]?.span.addEvent("stale commit dropped")
            case .joinedRun:
                open[RunKey(record: record, generation: generation)]?.span.addEvent("joined a shared run")
            case .removed:
                declarations[ObjectIdentifier(record)] = nil
            default:
                break
            }
        }
    }
    /// The runs' spans as the core's hook: each run's span is started with its run, and its
    /// context bound around the task's creation (the task takes it with its task-locals) and
    /// around a delayed synchronous run's call.
    extension RunSpans: RunHook {
        @usableFromInline func runStarting(
            _ record: AnyTaskRecord, generation: UInt64, attempt: Int?, isQueuedSynchronous: Bool, start: () -> Void
        ) {
            let context = runStarting(
                record, generation: generation, attempt: attempt, isQueuedSynchronous: isQueuedSynchronous)
            ServiceContext.$current.withValue(context) { start() }
        }

        @usableFromInline func synchronousRunDue(_ record: AnyTaskRecord, generation: UInt64, call: () -> Void) {
            guard let context = context(of: record, generation: generation) else { return call() }
            ServiceContext.$current.withValue(context) { call() }
        }
    }

    extension RegistryCore {
        /// The runs' spans, if a tracer records them: the core's hook, which is a `RunSpans`
        /// whenever there is one (`RegistryConfiguration.makeRunHook` makes no other kind).
        /// May be read from any thread (set once, at creation); the object is loop thread only.
        @usableFromInline var runSpans: RunSpans? {
            guard let runHook else { return nil }
            // A checked cast, paid only by a registry whose runs have spans (each of which costs
            // far more).
            guard let spans = runHook as? RunSpans else {
                preconditionFailure("BUG DETECTED: a registry's run hook is not its RunSpans")
            }
            return spans
        }
    }
#endif
