#if Tracing || Metrics
    /// What hears of every traced event besides the ring: the runs' spans (trait `Tracing`) and
    /// their timers (trait `Metrics`). Loop thread only.
    protocol TraceEventSink: AnyObject {
        /// `kind` happened to `record`'s `generation` at `time` (loop nanoseconds).
        func observe(_ kind: TraceEvent.Kind, _ record: AnyTaskRecord, _ generation: UInt64, at time: UInt64)
    }
#endif

/// A registry's trace while it records: a ring of the latest `capacity` events, and how many
/// older ones it dropped to stay within it. Tracing a busy registry then costs memory that does
/// not grow; a registry that is not tracing has no recorder, and each place that would record
/// costs one check of the core's `trace` for nil. With the traits `Tracing` or `Metrics`, the
/// recorder also hands every event to the runs' spans and timers, when there are any: the
/// places that trace are the places they need to hear of.
///
/// Loop thread only (held by the loop-confined core).
@usableFromInline
final class TraceRecorder {
    /// The most events kept; 0 for a recorder that keeps none and only hands them to `sinks`
    /// (a registry that makes spans or timers and records no trace).
    let capacity: Int
    #if Tracing || Metrics
        /// What hears of every event besides the ring.
        var sinks: [any TraceEventSink] = []
    #endif
    private var ring: [TraceEvent] = []
    /// Where the next event goes once the ring is full: its oldest.
    private var next = 0
    private(set) var dropped: UInt64 = 0
    /// The events kept now. O(1).
    var count: Int { ring.count }

    /// - Precondition: `capacity` ≥ 1 (checked by the public entry point).
    init(capacity: Int) {
        self.capacity = capacity
        ring.reserveCapacity(min(capacity, 4_096))
    }

    /// Whether it keeps events (what `TaskRegistry.startTrace` calls recording).
    var isRecording: Bool { capacity > 0 }

    func record(_ event: TraceEvent) {
        #if Tracing || Metrics
            guard capacity > 0 else { return }
        #endif
        if ring.count < capacity {
            ring.append(event)
        } else {
            ring[next] = event
            next = next + 1 == capacity ? 0 : next + 1
            dropped &+= 1
        }
    }

    /// The events kept, oldest first.
    var events: [TraceEvent] {
        ring.count < capacity ? ring : Array(ring[next...] + ring[..<next])
    }
}

extension RegistryCore {
    /// A recorder keeping the latest `capacity` events (and handing each to the runs' spans
    /// and timers, if any).
    func makeTraceRecorder(capacity: Int) -> TraceRecorder {
        let recorder = TraceRecorder(capacity: capacity)
        #if Tracing || Metrics
            recorder.sinks = traceSinks
        #endif
        return recorder
    }

    /// The recorder while no trace is recorded: none, or, when the runs have spans or timers,
    /// one that keeps no event and hands each to them.
    var idleTraceRecorder: TraceRecorder? {
        #if Tracing || Metrics
            traceSinks.isEmpty ? nil : makeTraceRecorder(capacity: 0)
        #else
            nil
        #endif
    }

    #if Tracing || Metrics
        /// The runs' spans and timers, those there are.
        var traceSinks: [any TraceEventSink] {
            var sinks: [any TraceEventSink] = []
            #if Tracing
                if let runSpans { sinks.append(runSpans) }
            #endif
            #if Metrics
                if let runTimers = integrations.runTimers as? RunTimers { sinks.append(runTimers) }
            #endif
            return sinks
        }

        /// Hands the events to `traceSinks` from now on: after the run timers came or went.
        func traceSinksChanged() {
            if let recorder = trace, recorder.isRecording {
                recorder.sinks = traceSinks
            } else {
                useTraceRecorder(idleTraceRecorder)
            }
        }
    #endif

    /// Records `kind` for `record`'s `generation` at the loop's time, when tracing. Loop thread.
    @inline(__always)
    func trace(_ record: AnyTaskRecord, _ generation: UInt64, _ kind: @autoclosure () -> TraceEvent.Kind) {
        guard let recorder = trace else { return }
        recordTrace(recorder, record, generation, kind())
    }

    /// Records a landed commit (`AnyTaskRecord.noteCommitLanded`, once it saw a trace). Loop thread.
    @usableFromInline
    func traceCommitLanded(_ record: AnyTaskRecord, _ generation: UInt64) {
        trace(record, generation, .commitLanded)
    }

    /// Records the registry's shutdown, when tracing. Loop thread.
    func traceShutdown() {
        trace?.record(
            TraceEvent(time: unretainedLoop.now.nanoseconds, key: "", name: .main, generation: 0, kind: .shutDown))
    }

    @inline(never)
    private func recordTrace(
        _ recorder: TraceRecorder, _ record: AnyTaskRecord, _ generation: UInt64, _ kind: TraceEvent.Kind
    ) {
        let time = unretainedLoop.now.nanoseconds
        #if Tracing || Metrics
            for sink in recorder.sinks { sink.observe(kind, record, generation, at: time) }
            guard recorder.isRecording else { return }
        #endif
        recorder.record(
            TraceEvent(time: time, key: record.traceKey, name: record.name, generation: generation, kind: kind))
    }
}
