import TaskLoopCore

// Calls from other threads: queued under a lock, applied in order on the loop thread.
extension TaskRegistry {

    @inlinable
    func post(_ operation: PostedOperation, limited: Bool = false) throws(RegistryError) {
        // Before the loop starts nothing can drain the queue: refuse, and keep the registry
        // usable for when it does.
        guard loop.hasStarted else { throw posted.isClosed ? .shutDown : .loopNotStarted }
        guard try posted.append(operation, limited: limited) else { return }
        do {
            try loop.execute { [self] in self.runPosted() }  // one wake-up per batch
        } catch {
            // The loop's shutdown has begun, and this registry's hook has not closed the queue
            // yet (the append above found it open): the hook applies what is queued, this call
            // with it, before it cancels every task. So the call succeeded, and its phase will
            // say how it ended. (Dropping the queue here used to tell this caller `.shutDown`
            // for a call the hook applied, and a caller whose call joined this batch success
            // for a call that was dropped.)
            core.logDebug("calls posted as the loop began its shutdown are left to the shutdown hook (\(error))")
        }
    }

    /// Applies every posted operation, in order. Loop thread only.
    @inlinable
    func runPosted() {
        posted.take(into: &postedBuffer)
        for index in postedBuffer.indices {
            // Moved out, not copied: a copy would retain and release every payload.
            switch postedBuffer[index].take()! {
            case .declare(let key, let name, let identity, let values, let body):
                apply(key, name: name, identity: ErasedIdentity(identity), values: values, body: body)
            #if Tracing
                case .declareTraced(let key, let name, let identity, let values, let body, let context):
                    if let spans = core.runSpans {
                        applyTraced(key, name, ErasedIdentity(identity), values, body, nil, context: context, spans)
                    }
            #endif
            case .remove(let key):
                applyRemove(key, reason: .removed)
            case .control(let key, let name, let control):
                applyControl(key, name, control)
            case .flush(let continuation):
                continuation.resume()
            case .observe(let key, let name, let continuation):
                addObserver(continuation, key: key, name: name)
            case .unobserve(let observerKey, let id):
                removeObserver(observerKey, id: id)
            case .followIdentities(let start):
                start(self)
            }
        }
        postedBuffer.removeAll(keepingCapacity: true)
    }

    /// Answers a posted call that can no longer be applied.
    @usableFromInline
    static func abandon(_ operation: PostedOperation) {
        switch operation {
        case .flush(let continuation): continuation.resume()
        case .observe(_, _, let continuation): continuation.finish()
        case .declare, .remove, .control, .unobserve, .followIdentities: break
        #if Tracing
            case .declareTraced: break
        #endif
        }
    }

    /// Returns once every `task`/`remove` posted from other threads before this call has been
    /// applied. Call it before reading what those calls did (`countersSnapshot()`, a
    /// `submit` on the loop): a posted call is applied in its batch, which may run after a
    /// closure you post to the loop yourself.
    ///
    /// - Note: May be called from any task.
    public func flush() async {
        if loop.inLoop {
            runPosted()
            return
        }
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            do {
                try post(.flush(continuation))
            } catch {
                continuation.resume()  // shut down: nothing is pending any more
            }
        }
    }
}
