import TaskLoopCore

// Recording the registry's trace: a timeline of every task's declarations, windows, runs,
// cancellations and commits, exported as Trace Event JSON (see `RegistryTrace`).
extension TaskRegistry {
    /// Starts recording the trace, into a ring of the latest `capacity` events (older ones are
    /// dropped, and counted). Recording again starts a new, empty trace. Off by default; while
    /// off, it costs the registry nothing measurable.
    ///
    /// What it records, per task: each declaration with a new identity (with the identity's
    /// description), a debounce or throttle window opening and closing, a run starting (and
    /// whether off the loop), a cancellation with its reason (of a run, or of a generation that
    /// never ran), each commit landed and each stale commit dropped, a stored result, a run's
    /// end with its phase, the progress signal, a removal; for an observed identity, the run
    /// whose write caused the re-evaluation, and a stopped cycle; and the registry's shutdown.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread;
    ///   `.invalidTraceCapacity` for a capacity below 1.
    /// - Note: Loop thread only; never traps.
    public func startTrace(capacity: Int = RegistryTrace.defaultCapacity) throws(RegistryError) {
        guard loop.inLoop else { throw .calledOffLoopThread }
        guard capacity >= 1 else { throw .invalidTraceCapacity(capacity) }
        core.useTraceRecorder(core.makeTraceRecorder(capacity: capacity))
    }

    /// The trace recorded so far, while recording goes on; `nil` when not recording.
    ///
    /// - Complexity: O(n) in the events kept (they are copied).
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    public func currentTrace() throws(RegistryError) -> RegistryTrace? {
        guard loop.inLoop else { throw .calledOffLoopThread }
        guard let recorder = core.trace, recorder.isRecording else { return nil }
        return RegistryTrace(
            events: recorder.events, droppedEvents: recorder.dropped, capacity: recorder.capacity,
            endTime: loop.now.nanoseconds)
    }

    /// The number of events the trace holds now (at most its capacity), without copying
    /// them; `nil` when not recording. O(1): a caller can refuse a trace too large to send
    /// before it copies or renders anything.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    public func traceEventCount() throws(RegistryError) -> Int? {
        guard loop.inLoop else { throw .calledOffLoopThread }
        guard let recorder = core.trace, recorder.isRecording else { return nil }
        return recorder.count
    }

    /// Stops recording and returns the trace; `nil` when not recording.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    @discardableResult
    public func stopTrace() throws(RegistryError) -> RegistryTrace? {
        let trace = try currentTrace()
        core.useTraceRecorder(core.idleTraceRecorder)
        return trace
    }
}
