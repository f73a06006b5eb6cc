import Synchronization

/// A cap on how many actions run at once: every task declared with the same limit (this value,
/// or a copy of it) shares it, so one limit made for a backend protects it from every template
/// and declaration that calls it.
///
/// A run that would pass the cap is not started: it waits, phase `waiting`, in the limit's
/// queue (`TaskSnapshot.waitReason` `.concurrencyLimit`), ordered by priority, then by arrival.
/// A new identity for a queued slot replaces the queued one, which ends
/// `cancelled(.supersededByPolicy)` without calling its action, and joins at the back:
/// the identity that has held longest, the one a typist most likely kept, is served first, and
/// a slot whose identity keeps changing never holds the head. `remove`, `cancel` and
/// `dropPending` take the slot out of the queue. A place is taken when a run starts and given
/// back when its action returns, so a cancelled run keeps its place until it has actually
/// stopped, as a semaphore's permit would be kept; the queue's head starts in the loop turn
/// the place comes free.
///
/// Each registry counts its own runs: the same limit given to two registries (or to the shards
/// of a `ShardedTaskRegistry`) caps each of them separately.
///
/// ```swift
/// let backend = try ConcurrencyLimit(maxRunning: 64)
/// let search = try TaskTemplate<SessionID>(debounce: .milliseconds(150), limit: backend) { session, context in
///     … // at most 64 of these run at once; queued searches for old queries never start
/// }
/// ```
///
/// A value type; may be made and used on any thread.
public struct ConcurrencyLimit: Hashable, Sendable, CustomStringConvertible {
    /// Tells one limit from another: each `init` takes the next number (from 1), so two limits
    /// with the same maximum are two queues, and copies of one limit are one.
    @usableFromInline let id: UInt32
    /// How many actions of the tasks declared with this limit may run at once.
    public var maxRunning: Int { Int(maxRunningBits) }
    @usableFromInline let maxRunningBits: UInt32

    /// The largest `maxRunning`.
    public static let maxRunningLimit = Int(UInt32.max)

    /// Makes a new limit, shared by the tasks declared with it (or with copies of it).
    ///
    /// - Parameter maxRunning: how many actions may run at once; 1 through `maxRunningLimit`.
    /// - Throws: `RegistryError.invalidConcurrencyLimit` for a maximum below 1 or above
    ///   `maxRunningLimit`.
    /// - Note: May be called from any thread.
    public init(maxRunning: Int) throws(RegistryError) {
        guard maxRunning >= 1 && maxRunning <= Self.maxRunningLimit else { throw .invalidConcurrencyLimit(maxRunning) }
        maxRunningBits = UInt32(maxRunning)
        // 2^32 limits made in one process before the numbers wrap (and two limits could meet).
        id = nextConcurrencyLimitID.add(1, ordering: .relaxed).newValue
    }

    /// The limit as one word, never 0 (`TaskOptions.Values.limitBits`).
    @inlinable var bits: UInt64 { UInt64(id) << 32 | UInt64(maxRunningBits) }

    /// The limit whose `bits` these are; nil for 0.
    init?(bits: UInt64) {
        guard bits != 0 else { return nil }
        id = UInt32(truncatingIfNeeded: bits >> 32)
        maxRunningBits = UInt32(truncatingIfNeeded: bits)
    }

    /// `limit #N (maxRunning M)`.
    public var description: String { "limit #\(id) (maxRunning \(maxRunning))" }
}

/// The number the next `ConcurrencyLimit` takes.
private let nextConcurrencyLimitID = Atomic<UInt32>(0)
