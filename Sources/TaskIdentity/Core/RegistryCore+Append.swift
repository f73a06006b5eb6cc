import TaskLoopCore

/// One identity waiting under `appendInOrder` behind the task's pending generation: a
/// declaration not yet made a generation (it becomes one when the run before it starts).
struct AppendedDeclaration {
    let identity: any Hashable & Sendable
    let options: TaskOptions
    let body: RunBody
}

// `RestartPolicy.appendInOrder`: every identity runs, once each, in the order declared. The
// machine holds the next identity beside the run (as under `keepRunning`); the ones after it
// wait here, in the record's rare state, and become generations one at a time.
extension RegistryCore {
    /// A declaration under `appendInOrder` for `record`, asked before the registry compares
    /// identities: whether it was taken here. It is while a generation is pending: compared
    /// with the last identity waiting (equal: `unchanged`), then dropped at the bound
    /// (`dropped`, traced), or queued behind the others. With nothing pending it is a
    /// declaration like any other (it starts, or waits for the run beside it). Out of line.
    @usableFromInline @inline(never)
    func appendsDeclaration(
        _ record: AnyTaskRecord, identity: any Hashable & Sendable, options: TaskOptions, body: RunBody
    ) -> Bool {
        guard record.state.pending != .none else { return false }
        let waiting = record.rare?.appended.count ?? 0
        let latest = record.rare?.appended.last?.identity ?? record.identity
        if identitiesEqual(latest, identity) {
            _ = tally { record.state.declare(changed: false, debounce: 0, gate: .unused, counters: &$0) }
            return true
        }
        // The pending generation counts as one of those waiting.
        if waiting + 1 >= options.appendMaxQueued {
            dropAppended(record)
            return true
        }
        record.makeRare().appended.append(AppendedDeclaration(identity: identity, options: options, body: body))
        return true
    }

    /// The next identity waiting under `appendInOrder` becomes the task's pending generation,
    /// if none is pending (after a run starts, or after the pending one ended without one).
    func declareNextAppended(_ record: AnyTaskRecord) {
        guard let rare = record.rare, !rare.appended.isEmpty, record.state.pending == .none,
            !record.state.isRemoved, !isShutDown
        else { return }
        let next = rare.appended.removeFirst()
        record.identity = next.identity
        adopt(next.options, for: record)
        beginGeneration(record, options: next.options, body: next.body)
    }

    /// The identities still waiting under `appendInOrder` are dropped (`cancel`, `remove`,
    /// shutdown): each counted as a declaration dropped, and traced.
    func discardAppended(_ record: AnyTaskRecord) {
        guard let rare = record.rare, !rare.appended.isEmpty else { return }
        let count = rare.appended.count
        rare.appended.removeAll()
        for _ in 0..<count { dropAppended(record) }
    }

    /// One identity under `appendInOrder` that never becomes a generation: counted, traced.
    private func dropAppended(_ record: AnyTaskRecord) {
        tally { record.state.dropNewIdentity(counters: &$0) }
        if trace != nil { trace(record, record.state.generation, .declarationDropped) }
    }
}
