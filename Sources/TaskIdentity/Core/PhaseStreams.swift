import TaskLoopCore

/// The phase streams of one registry's tasks (`phaseUpdates(of:)`), by slot and name.
///
/// Its own object, held by the registry and by its core, so that a registry released without
/// `shutdown()` still ends every stream the way `shutdown()` does: the core's records publish
/// their last phases here while they are cancelled on the loop, after the registry is gone.
///
/// Loop thread only.
@usableFromInline
final class PhaseStreams<Key: Hashable & Sendable> {
    @usableFromInline typealias Continuation = AsyncStream<TaskPhaseUpdate>.Continuation

    /// Unchecked exclusivity: loop-confined, read on every new record's declaration; no access is
    /// held across a call that could reach it (see docs/safety.md).
    @exclusivity(unchecked) @usableFromInline var observers: [TaskRegistry<Key>.ObserverKey: [UInt64: Continuation]] =
        [:]
    private var nextObserverID: UInt64 = 0

    @usableFromInline init() {}

    /// Adds `continuation` as an observer of the task `observerKey`; returns its id.
    func add(_ continuation: Continuation, for observerKey: TaskRegistry<Key>.ObserverKey) -> UInt64 {
        let id = nextObserverID
        nextObserverID += 1
        observers[observerKey, default: [:]][id] = continuation
        return id
    }

    /// Removes an observer; returns whether the task has no observer left.
    func remove(_ observerKey: TaskRegistry<Key>.ObserverKey, id: UInt64) -> Bool {
        observers[observerKey]?[id] = nil
        guard observers[observerKey]?.isEmpty == true else { return false }
        observers[observerKey] = nil
        return true
    }

    /// Sends one update to the observers of `record`.
    func publish(_ record: TaskRecord<Key>, generation: UInt64, phase: TaskPhase) {
        guard let list = observers[TaskRegistry<Key>.ObserverKey(key: record.key, name: record.name)] else {
            record.hasObservers = false
            return
        }
        let update = TaskPhaseUpdate(generation: generation, phase: phase, showsProgress: record.showsProgress)
        for continuation in list.values { continuation.yield(update) }
    }

    /// Ends every stream (after its task's last phase was published).
    func finishAll() {
        for list in observers.values { for continuation in list.values { continuation.finish() } }
        observers = [:]
    }
}

extension TaskRegistry {
    /// The phases of the task `name` of slot `key`, starting with its phase now (`idle` if it is
    /// not declared), across removals and re-declarations, until the registry shuts down.
    ///
    /// The stream ends when the registry shuts down (or is released), once every action has
    /// ended: its last update is the task's final phase (a task still waiting or running then
    /// ends `cancelled(.registryShutDown)` on its own generation; a task already over sends
    /// nothing more).
    ///
    /// - Parameters:
    ///   - key: the slot.
    ///   - name: which of the slot's tasks (default `.main`).
    ///   - bufferingPolicy: what the stream keeps for a consumer that falls behind. The default
    ///     keeps every update (memory grows with a slow consumer); a view that only shows the
    ///     current phase wants `.bufferingNewest(1)`, which keeps the latest.
    /// - Asked for from inside a task, it raises the task's current generation to that task's
    ///   priority (`escalate(_:name:to:)`): whoever waits on the phases waits for the run.
    /// - Note: May be called from any thread; the stream may be consumed anywhere. Requested
    ///   from another thread before the loop starts, the stream ends at once, empty.
    public func phaseUpdates(
        of key: Key, name: TaskName = .main,
        bufferingPolicy: AsyncStream<TaskPhaseUpdate>.Continuation.BufferingPolicy = .unbounded
    ) -> AsyncStream<TaskPhaseUpdate> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: TaskPhaseUpdate.self, bufferingPolicy: bufferingPolicy)
        if loop.inLoop {
            addObserver(continuation, key: key, name: name)
        } else {
            do { try post(.observe(key, name, continuation)) } catch {
                core.log.debug("phase stream of task '\(name)' ended at once: \(error)")
                continuation.finish()
            }
        }
        // Asked for from a task, which will wait on it: the task's generation is raised to it.
        if let priority = withUnsafeCurrentTask(body: { $0?.priority }) {
            try? escalate(key, name: name, to: priority)
        }
        return stream
    }

    @usableFromInline
    func addObserver(_ continuation: AsyncStream<TaskPhaseUpdate>.Continuation, key: Key, name: TaskName) {
        guard !core.isShutDown else {
            continuation.finish()
            return
        }
        let observerKey = ObserverKey(key: key, name: name)
        let id = phaseStreams.add(continuation, for: observerKey)
        let current = record(key, name)
        current?.hasObservers = true
        continuation.yield(
            TaskPhaseUpdate(
                generation: current?.generation ?? 0, phase: current?.phase ?? .idle,
                showsProgress: current?.showsProgress ?? false))
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            if self.loop.inLoop {
                self.removeObserver(observerKey, id: id)
            } else {
                try? self.post(.unobserve(observerKey, id))
            }
        }
    }

    @usableFromInline
    func removeObserver(_ observerKey: ObserverKey, id: UInt64) {
        if phaseStreams.remove(observerKey, id: id) {
            record(observerKey.key, observerKey.name)?.hasObservers = false
        }
    }
}
