/// A registry's trace while it records: a ring of the latest `capacity` events, and how many
/// older ones it dropped to stay within it. Tracing a busy registry then costs memory that does
/// not grow; a registry that is not tracing has no recorder, and each place that would record
/// costs one check of the core's `trace` for nil.
///
/// Loop thread only (held by the loop-confined core).
@usableFromInline
final class TraceRecorder {
    /// The most events kept; 0 for a recorder that keeps none and only hands them to `spans`
    /// (a registry that makes spans and records no trace).
    let capacity: Int
    #if Tracing
        /// The runs' spans, which hear of every event (trait `Tracing`).
        let spans: RunSpans?
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
        #if Tracing
            self.spans = nil
        #endif
        ring.reserveCapacity(min(capacity, 4_096))
    }

    #if Tracing
        /// A recorder that also hands each event to `spans`.
        init(capacity: Int, spans: RunSpans?) {
            self.capacity = capacity
            self.spans = spans
            ring.reserveCapacity(min(capacity, 4_096))
        }
    #endif

    /// Whether it keeps events (what `TaskRegistry.startTrace` calls recording).
    var isRecording: Bool { capacity > 0 }

    func record(_ event: TraceEvent) {
        #if Tracing
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
    /// A recorder keeping the latest `capacity` events (and handing each to the runs' spans,
    /// if any).
    func makeTraceRecorder(capacity: Int) -> TraceRecorder {
        #if Tracing
            TraceRecorder(capacity: capacity, spans: runSpans)
        #else
            TraceRecorder(capacity: capacity)
        #endif
    }

    /// The recorder while no trace is recorded: none, or, when the runs have spans, one that
    /// keeps no event and hands each to them.
    var idleTraceRecorder: TraceRecorder? {
        #if Tracing
            runSpans.map { TraceRecorder(capacity: 0, spans: $0) }
        #else
            nil
        #endif
    }

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
        #if Tracing
            if let spans = recorder.spans { spans.observe(kind, record, generation) }
            guard recorder.isRecording else { return }
        #endif
        recorder.record(
            TraceEvent(
                time: unretainedLoop.now.nanoseconds, key: record.traceKey, name: record.name,
                generation: generation, kind: kind))
    }
}
