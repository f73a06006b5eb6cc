// Observation's `didSet` tracking is SPI (public, underscored for SwiftUI): the public
// `onChange` fires in `willSet`, before the new value is stored, so an evaluation on the loop
// could read the old value of a write made on another thread and miss it for good.
@_spi(SwiftUI) import Observation
import Synchronization
import UVLoop

/// The tracking of one observed task: its identity closure, evaluated on the loop thread with
/// Observation tracking its reads, and what to declare with the value. Each evaluation
/// subscribes anew (`ObservationSubscription`); the first change after it posts one
/// re-evaluation to the loop, so every write in between coalesces into it.
///
/// Loop thread only, except that a subscription holds it until it fires or is cancelled.
@usableFromInline
class AnyIdentityTracker: @unchecked Sendable {
    // @unchecked Sendable: a subscription hands the tracker to the loop through the registry's
    // inbox; its state is touched on the loop thread only.

    /// False once the task's tracking has ended (slot removed, re-declared, shutdown).
    final var isTracking = true
    /// The subscription of the latest evaluation, until it fires or tracking ends.
    final var subscription: ObservationSubscription?

    /// Evaluates the identity closure and declares its value. Overridden per key and id type.
    func evaluate(cause: ObservedRun?) {}

    /// Ends the tracking: no later write re-evaluates, and no subscription keeps this alive.
    @usableFromInline final func stop() {
        isTracking = false
        subscription?.cancel()
        subscription = nil
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
    }

    override func evaluate(cause: ObservedRun?) {
        guard isTracking, let registry else { return }
        let subscription = ObservationSubscription(tracker: self, inbox: registry.observationInbox)
        self.subscription?.cancel()
        self.subscription = subscription
        var value = withObservationTracking(identity, didSet: { tracking in subscription.fired(tracking) })
        // Observation installs the subscription after `identity` returns: a write stored on
        // another thread in between is reported to nobody. Read once more, now that it is
        // installed: that read sees every write stored before, and every later write fires.
        let settled = identity()
        if settled != value { value = settled }
        // The closure may have ended this tracking (by removing its own slot, say).
        guard isTracking else { return }
        registry.applyObserved(self, value: value, cause: cause)
    }
}

/// The link between one evaluation's reads and its tracker. Observation calls `fired` on the
/// writer's thread, in the writer's context, after the value is stored; the first call posts
/// the tracker to the loop with the writer's causal link, later ones do nothing.
///
/// May be used from any thread: the tracker reference is an atomic word.
final class ObservationSubscription: Sendable {
    /// The tracker, retained, as a bit pattern; 0 once fired or cancelled. Exchanged
    /// atomically, so exactly one of `fired` and `cancel` takes (and releases) it.
    private let tracker: Atomic<UInt>
    private let inbox: ObservationInbox

    init(tracker: AnyIdentityTracker, inbox: ObservationInbox) {
        // Unmanaged: the retained reference is owned by this word and released by whoever
        // exchanges it for 0 (see docs/safety.md; `ObservationTests` checks the tracker is freed).
        self.tracker = Atomic(UInt(bitPattern: Unmanaged.passRetained(tracker).toOpaque()))
        self.inbox = inbox
    }

    deinit { cancel() }

    /// A property this evaluation read has changed. Any thread.
    func fired(_ tracking: ObservationTracking) {
        tracking.cancel()  // one notification per evaluation: later writes wait for the next one
        guard let tracker = take() else { return }
        inbox.post(tracker, cause: ObservedRun.current)
    }

    /// Drops the tracker without posting it. Any thread.
    func cancel() {
        _ = take()
    }

    private func take() -> AnyIdentityTracker? {
        let bits = tracker.exchange(0, ordering: .acquiringAndReleasing)
        guard let pointer = UnsafeRawPointer(bitPattern: bits) else { return nil }
        return Unmanaged<AnyIdentityTracker>.fromOpaque(pointer).takeRetainedValue()
    }
}

/// The re-evaluations posted to a registry's loop, from any thread. One loop wake-up serves
/// every tracker posted before the loop takes them; a tracker is posted at most once per
/// evaluation, so the inbox holds at most one entry per observed task.
final class ObservationInbox: @unchecked Sendable {
    // @unchecked Sendable: `pending` and `drainScheduled` are only touched under `mutex`.
    private let mutex = PThreadMutex()
    private var pending: [(tracker: AnyIdentityTracker, cause: ObservedRun?)] = []
    private var drainScheduled = false
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
            pending = []
            drainScheduled = false
            mutex.unlock()
        }
    }

    /// Re-evaluates every posted tracker, in posting order. Loop thread only.
    private func drain() {
        mutex.lock()
        let batch = pending
        pending = []
        drainScheduled = false
        mutex.unlock()
        for (tracker, cause) in batch { tracker.evaluate(cause: cause) }
    }
}
