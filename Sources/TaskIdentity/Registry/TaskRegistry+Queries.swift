import TaskLoopCore

// Reading the registry: at once on the loop thread, or in one hop from any thread.
extension TaskRegistry {

    /// The phase of the task `name` of slot `key`, or `nil` if no such task is declared.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func phase(of key: Key, name: TaskName = .main) throws(RegistryError) -> TaskPhase? {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.phase
    }

    /// Whether the delayed progress signal of the task is on.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func showsProgress(of key: Key, name: TaskName = .main) throws(RegistryError) -> Bool {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.showsProgress ?? false
    }

    /// The current generation of the task (how many identities it has had in this slot's
    /// lifetime), or `nil` if no such task is declared.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func generation(of key: Key, name: TaskName = .main) throws(RegistryError) -> UInt64? {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.generation
    }

    /// The latest result stored by a run of the task `name` of slot `key`
    /// (`TaskContext.commit(result:)`), as `type`; `nil` if none was stored, if it is of
    /// another type, or if no such task is declared. A result outlives its run: it stays until
    /// a newer run stores one or the slot is removed.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(of:name:)` there).
    /// - Note: Loop thread only; never traps.
    public func result<Value>(of key: Key, name: TaskName = .main, as type: Value.Type) throws(RegistryError) -> Value?
    {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return record(key, name)?.extras?.result as? Value
    }

    // Inlinable so that it is specialized for the caller's key: unspecialized, a lookup spent a
    // third of its time finding generic metadata (`taskid serve`'s EXISTS over many keys).
    /// Whether slot `key` exists.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `snapshot(ofSlot:)` there).
    /// - Note: Loop thread only; never traps.
    @inlinable
    public func contains(_ key: Key) throws(RegistryError) -> Bool {
        guard loop.inLoop else { throw .calledOffLoopThread }
        return slots.first(for: key) != nil
    }

    /// The counters.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread (use
    ///   `countersSnapshot()` there).
    /// - Note: Loop thread only; never traps.
    public var counters: RegistryCounters {
        get throws(RegistryError) {
            guard loop.inLoop else { throw .calledOffLoopThread }
            return core.counters
        }
    }

    /// Timers the registry holds open (one per distinct debounce, progress, synchronous-run
    /// delay and time limit, one per throttled task, one per task retrying or that has retried).
    /// 0 after shutdown.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the loop thread.
    /// - Note: Loop thread only; never traps.
    public var openTimerCount: Int {
        get throws(RegistryError) {
            guard loop.inLoop else { throw .calledOffLoopThread }
            return core.openTimerCount
        }
    }

    // MARK: - Querying from any thread

    /// The task `name` of slot `key` as it is now (phase, generation, progress signal, latest
    /// result), read on the loop thread in one hop; `nil` if no such task is declared.
    ///
    /// - Throws: `RegistryError.loopNotStarted` before the loop starts, `.shutDown` once the
    ///   loop has shut down. (After the registry's own shutdown, with its loop still running,
    ///   it answers `nil`: every slot is gone.)
    /// - Note: May be called from any task; on the loop thread it reads at once.
    public func snapshot(of key: Key, name: TaskName = .main) async throws(RegistryError) -> TaskSnapshot? {
        try await onLoop { [self] in self.record(key, name).map(TaskSnapshot.init(record:)) }
    }

    /// Every task of slot `key` as it is now, by name; empty if the slot does not exist (so
    /// `isEmpty` answers "is there such a slot" from any thread).
    ///
    /// - Complexity: O(n) in the slot's tasks, plus one hop to the loop from another thread;
    ///   it allocates a dictionary.
    /// - Throws: as `snapshot(of:name:)`.
    /// - Note: May be called from any task.
    public func snapshot(ofSlot key: Key) async throws(RegistryError) -> [TaskName: TaskSnapshot] {
        try await onLoop { [self] in
            var tasks: [TaskName: TaskSnapshot] = [:]
            var next = self.slots.first(for: key)
            while let record = next, record.key == key {
                tasks[record.name] = TaskSnapshot(record: record)
                next = record.nextInBucket
            }
            return tasks
        }
    }

    /// The counters, read on the loop thread.
    ///
    /// - Throws: as `snapshot(of:name:)`.
    /// - Note: May be called from any task.
    public func countersSnapshot() async throws(RegistryError) -> RegistryCounters {
        try await onLoop { [self] in self.core.counters }
    }

    /// Runs `body` on the loop thread and returns its result, translating the loop's refusal
    /// (its `LoopError` stays in the thrown error's `loopError`).
    func onLoop<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async throws(RegistryError)
        -> Result
    {
        if loop.inLoop { return body() }
        guard loop.hasStarted else { throw .loopNotStarted }
        do {
            return try await loop.submit(body)
        } catch let error as LoopError {
            throw RegistryError(loopRefused: error)  // `body` throws nothing: the loop refused it
        } catch {
            preconditionFailure("BUG DETECTED: a non-throwing body threw \(error)")
        }
    }
}
