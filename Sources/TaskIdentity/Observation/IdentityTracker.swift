// Observation's `didSet` tracking is SPI (public, underscored for SwiftUI), with no stability
// promise, so only the `ObservationSPI` trait imports it. The public `onChange` fires in
// `willSet`, before the new value is stored, so an evaluation on the loop may read the old
// value of a write made on another thread (see `ObservationMechanism`).
import Synchronization
import TaskLoopCore

#if !ObservationSPI
    import Observation
#else
    @_spi(SwiftUI) import Observation
#endif

/// The tracking of one observed task: its identity closure, evaluated on the loop thread with
/// Observation tracking its reads, and what to declare with the value. Each evaluation arms the
/// tracker's `ObservationSubscription`; the first change after it posts one re-evaluation to
/// the loop, so every write in between coalesces into it.
///
/// Loop thread only, except that an armed subscription holds it until it fires or is cancelled.
@usableFromInline
class AnyIdentityTracker: @unchecked Sendable {
    // @unchecked Sendable: a subscription hands the tracker to the loop through the registry's
    // inbox; its state is touched on the loop thread only.

    /// False once the task's tracking has ended (slot removed, re-declared, shutdown).
    /// Unchecked exclusivity: loop thread only, no access held across a call (docs/safety.md).
    @exclusivity(unchecked) final var isTracking = true
    final let subscription: ObservationSubscription
    final let mechanism: ObservationMechanism
    #if ObservationSPI
        /// What Observation calls after a tracked property is stored (`didSet`): made once per
        /// tracker, so that an evaluation allocates no closure for it.
        final let onDidSet: @Sendable (ObservationTracking) -> Void
    #endif
    /// What Observation calls before a tracked property is stored (`willSetAndHop`); once.
    final let onWillSet: @Sendable () -> Void

    init(inbox: ObservationInbox, mechanism: ObservationMechanism) {
        let subscription = ObservationSubscription(inbox: inbox)
        self.subscription = subscription
        self.mechanism = mechanism
        #if ObservationSPI
            self.onDidSet = { tracking in
                tracking.cancel()  // one notification per evaluation: later writes wait for the next one
                subscription.fired()
            }
        #endif
        // Observation calls a public `onChange` once, and drops the tracking itself.
        self.onWillSet = { subscription.fired() }
    }

    /// `read()`, with Observation tracking what it reads and reporting the first change of it
    /// to the subscription, by `mechanism`.
    @inline(__always)
    final func tracking<Value>(_ read: () -> Value) -> Value {
        #if !ObservationSPI
            return withObservationTracking(read, onChange: onWillSet)
        #else
            switch mechanism {
            case .didSet: return withObservationTracking(read, didSet: onDidSet)
            case .willSetAndHop: return withObservationTracking(read, onChange: onWillSet)
            }
        #endif
    }

    /// Evaluates the identity closure and declares its value. Overridden per key and id type.
    func evaluate(cause: ObservedRun?) {}

    /// Ends the tracking: no later write re-evaluates, and no subscription keeps this alive.
    @usableFromInline final func stop() {
        isTracking = false
        subscription.cancel()
    }
}

/// The tracking of the task `name` of slot `key`, whose identity is `identity()`.
final class IdentityTracker<Key: Hashable & Sendable, ID: Hashable & Sendable>: AnyIdentityTracker,
    @unchecked Sendable
{
    // @unchecked Sendable: as its superclass (loop thread only).
    weak var registry: TaskRegistry<Key>?
    let key: Key
    let name: TaskName
    let values: TaskOptions.Values
    let identity: () -> ID
    /// The run body for a value, carrying its causal link (see `ObservedRun`).
    let makeBody: (ID, ObservedRun) -> RunBody
    /// The task's record once declared, so that an evaluation needs no lookup by key. Tracking
    /// ends before the record can be replaced (removal, an explicit declaration). Unchecked
    /// exclusivity: loop thread only, no access held across a call (docs/safety.md).
    @exclusivity(unchecked) var record: TaskRecord<Key>?

    init(
        registry: TaskRegistry<Key>, key: Key, name: TaskName, values: TaskOptions.Values,
        identity: @escaping () -> ID, makeBody: @escaping (ID, ObservedRun) -> RunBody
    ) {
        self.registry = registry
        self.key = key
        self.name = name
        self.values = values
        self.identity = identity
        self.makeBody = makeBody
        super.init(inbox: registry.observationInbox, mechanism: registry.observationMechanism)
    }

    override func evaluate(cause: ObservedRun?) {
        guard isTracking, let registry else { return }
        let existing = registry.observedRecord(self)
        // The link of the run this evaluation would start. The closure runs under it, so that
        // what the closure itself writes counts as caused by the chain (a closure that writes
        // what it reads is a cycle like any other, not a loop turn after turn at depth 0).
        let run = ObservedRun(
            key: key, name: name, generation: (existing?.generation ?? 0) &+ 1, depth: cause.map { $0.depth &+ 1 } ?? 0,
            parent: cause)
        if run.depth > registry.maxObservationDepth {
            // The chain is too long. Read the value once more, untracked (its writes belong to
            // the chain too), and stop it, unless the value converged; tracking ends with it,
            // since a closure that re-triggers itself would otherwise never stop.
            let value = SynchronousCause.withCause(run) { identity() }
            if existing == nil || !identitiesEqual(existing!.identity, value) {
                registry.core.tally { $0.identityEvaluations &+= 1 }
                registry.stopCycle(self, value: value, run: run)
                return
            }
        }
        subscription.arm(self)
        var changedBetweenReads = false
        let settled = SynchronousCause.withCause(run) { () -> ID in
            // Observation installs the subscription after `identity` returns: a write stored
            // on another thread in between is reported to nobody. Read once more, now that it
            // is installed: that read sees every write stored before, and every later write
            // fires. (The reads are compared here, so that no `(ID, ID)` tuple is made: in
            // this unspecialized generic code its type metadata is built at run time, under a
            // lock.)
            let tracked = tracking(identity)
            let settled = identity()
            changedBetweenReads = settled != tracked
            return settled
        }
        // The closure may have ended this tracking (by removing its own slot, say).
        guard isTracking else { return }
        if changedBetweenReads, let again = subscription.take() {
            // Something was written between the two reads, and the reads tracked may not be the
            // ones `settled` depends on (`useA ? a : b`): evaluate again, tracked, as if the
            // subscription had fired, as a step of this chain (a closure whose value changes
            // on every call is then stopped as a cycle).
            registry.observationInbox.post(again, cause: run)
        }
        registry.applyObserved(self, value: settled, run: run, existing: existing)
    }
}

/// The link between a tracker's evaluations and Observation. Observation calls `fired` on the
/// writer's thread, in the writer's context, after the value is stored (before it, for
/// `willSetAndHop`); the first call after `arm` posts the tracker to the loop with the writer's
/// causal link, later ones do nothing.
///
/// May be used from any thread: the tracker reference is an atomic word.
final class ObservationSubscription: Sendable {
    /// The tracker, retained, as a bit pattern; 0 when not armed. Exchanged atomically, so
    /// exactly one of `fired` and `cancel` takes (and releases) each arming's reference.
    private let tracker = Atomic<UInt>(0)
    /// Weak: a subscription left in a model's registrar (until that property's next write)
    /// must not keep the inbox, and with it the loop, alive. (A weak reference to the loop
    /// itself would send every retain of the loop down the runtime's slow path.)
    private weak let inbox: ObservationInbox?

    init(inbox: ObservationInbox) {
        self.inbox = inbox
    }

    deinit { cancel() }

    /// Arms the subscription with `tracker` (its own), unless it is armed already. Loop thread.
    func arm(_ tracker: AnyIdentityTracker) {
        // Unmanaged: the retained reference is owned by this word and released by whoever
        // exchanges it for 0 (see docs/safety.md; `ObservationTests` checks the tracker is freed).
        let retained = Unmanaged.passRetained(tracker)
        let bits = UInt(bitPattern: retained.toOpaque())
        if !self.tracker.compareExchange(expected: 0, desired: bits, ordering: .acquiringAndReleasing).exchanged {
            retained.release()  // still armed from an evaluation that no write has fired yet
        }
    }

    /// A property an evaluation read has changed (or is changing). Any thread.
    func fired() {
        guard let tracker = take() else { return }
        inbox?.post(tracker, cause: ObservedRun.causeHere)
    }

    /// Disarms the subscription without posting. Any thread.
    func cancel() {
        _ = take()
    }

    /// Disarms the subscription and returns its tracker, if it was armed. Any thread.
    func take() -> AnyIdentityTracker? {
        let bits = tracker.exchange(0, ordering: .acquiringAndReleasing)
        guard let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        // Unmanaged: takes back the reference `arm` retained; only the exchange that got it sees it.
        return Unmanaged<AnyIdentityTracker>.fromOpaque(pointer).takeRetainedValue()
    }
}

/// The re-evaluations posted to a registry's loop, from any thread. One loop wake-up serves
/// every tracker posted before the loop takes them; a tracker is posted at most once per
/// evaluation, so the inbox holds at most one entry per observed task.
final class ObservationInbox: @unchecked Sendable {
    // @unchecked Sendable: `pending` and `drainScheduled` are only touched under `mutex`;
    // `draining` only on the loop thread, inside `drain`. Owned by its registry; subscriptions
    // reach it weakly.
    private let mutex = PThreadMutex()
    // Unchecked exclusivity: `mutex` orders every access to `pending` and `drainScheduled`, and
    // `draining` is the loop thread's alone; none is held across a call (docs/safety.md).
    @exclusivity(unchecked) private var pending: [(tracker: AnyIdentityTracker, cause: ObservedRun?)] = []
    @exclusivity(unchecked) private var drainScheduled = false
    /// The batch being evaluated: swapped with `pending`, so that both keep their capacity.
    @exclusivity(unchecked) private var draining: [(tracker: AnyIdentityTracker, cause: ObservedRun?)] = []
    private let loop: any TaskLoop

    init(loop: any TaskLoop) {
        self.loop = loop
    }

    /// Queues `tracker` for re-evaluation on the loop. Any thread.
    func post(_ tracker: AnyIdentityTracker, cause: ObservedRun?) {
        mutex.lock()
        pending.append((tracker, cause))
        let schedule = !drainScheduled
        drainScheduled = true
        mutex.unlock()
        guard schedule else { return }
        do {
            try loop.execute { [self] in self.drain() }
        } catch {
            // The loop has shut down, and every registry on it with it: tracking has ended.
            mutex.lock()
            pending.removeAll()
            drainScheduled = false
            mutex.unlock()
        }
    }

    /// Re-evaluates every posted tracker, in posting order. Loop thread only.
    private func drain() {
        mutex.lock()
        swap(&pending, &draining)
        drainScheduled = false
        mutex.unlock()
        for (tracker, cause) in draining { tracker.evaluate(cause: cause) }
        draining.removeAll(keepingCapacity: true)
    }
}
