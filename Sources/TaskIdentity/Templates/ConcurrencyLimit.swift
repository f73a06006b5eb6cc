import Synchronization
import TaskLoopCore

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
/// Under overload an unbounded queue grows without end, and every answer comes later. With
/// `maxQueued:`, a generation that would join a full queue sheds one: by default the oldest
/// queued generation (it has waited longest, and its caller has most likely given up: adaptive
/// LIFO's reasoning), or with `shed: .newest` the newcomer itself. A shed generation never
/// runs: it ends `cancelled(.shed)`, its task forgets the identity (declaring it again runs
/// it), and it is counted in `RegistryCounters.shed` (and `cancelled`), traced, and shown by
/// `limitState(of:)`. A queued generation is always its slot's newest identity (a new identity
/// for a queued slot replaces the queued one), so no key's newest identity is ever shed in
/// favour of an older identity of the same key. Priorities hold: the oldest generation of the
/// lowest priority queued is shed, and a newcomer of a lower priority than every queued one is
/// shed itself.
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
    /// How many generations may wait in this limit's queue, in each registry; nil for no bound.
    public let maxQueued: Int?
    /// What a generation that would join a full queue sheds (with `maxQueued`).
    public let shedding: Shedding

    /// What a full queue sheds.
    ///
    /// A value type; may be used on any thread.
    public enum Shedding: Hashable, Sendable, CustomStringConvertible {
        /// The queued generation that has waited longest (of the lowest priority queued).
        case oldest
        /// The generation that would join: the queue keeps those already in it.
        case newest

        /// `oldest` or `newest`.
        public var description: String {
            switch self {
            case .oldest: return "oldest"
            case .newest: return "newest"
            }
        }
    }

    /// The largest `maxRunning`.
    public static let maxRunningLimit = Int(UInt32.max)

    /// Makes a new limit, shared by the tasks declared with it (or with copies of it).
    ///
    /// - Parameters:
    ///   - maxRunning: how many actions may run at once; 1 through `maxRunningLimit`.
    ///   - maxQueued: how many generations may wait for a place, in each registry; 0 or more,
    ///     nil (the default) for no bound.
    ///   - shed: what a generation that would join a full queue sheds: the `oldest` queued one
    ///     (the default), or the `newest`, itself.
    ///   - fairness: how the queue shares the places among groups of keys: nil (the default)
    ///     for none, one queue in order of arrival; `.roundRobin(by:)` to serve each group in
    ///     turn, each group's generations in their own order.
    /// - Throws: `RegistryError.invalidConcurrencyLimit` for a maximum below 1 or above
    ///   `maxRunningLimit`, or a negative `maxQueued`.
    /// - Note: May be called from any thread.
    public init(
        maxRunning: Int, maxQueued: Int? = nil, shed: Shedding = .oldest, fairness: Fairness? = nil
    ) throws(RegistryError) {
        guard maxRunning >= 1 && maxRunning <= Self.maxRunningLimit else { throw .invalidConcurrencyLimit(maxRunning) }
        if let maxQueued, maxQueued < 0 { throw .invalidConcurrencyLimit(maxQueued: maxQueued) }
        maxRunningBits = UInt32(maxRunning)
        self.maxQueued = maxQueued
        shedding = shed
        // 2^32 limits made in one process before the numbers wrap (and two limits could meet).
        id = nextConcurrencyLimitID.add(1, ordering: .relaxed).newValue
        // Kept for the life of the process: a limit is made once per backend, not per request.
        if maxQueued != nil || fairness != nil {
            limitSettings.withLock { $0[id] = Settings(maxQueued: maxQueued, shedding: shed, fairness: fairness) }
        }
    }

    /// The fairness this limit was made with, if any (not part of its value: a closure is
    /// neither equatable nor hashable; copies of a limit share it). May be read from any thread.
    public var fairness: Fairness? { limitSettings.withLock { $0[id]?.fairness } }

    /// The limit as one word, never 0 (`TaskOptions.Values.limitBits`).
    @inlinable var bits: UInt64 { UInt64(id) << 32 | UInt64(maxRunningBits) }

    /// The limit whose `bits` these are; nil for 0.
    /// Its bound on the queue comes from the process's table of bounded limits (a declaration's
    /// options hold the limit as one word). Made when options are interned, not per change.
    init?(bits: UInt64) {
        guard bits != 0 else { return nil }
        let number = UInt32(truncatingIfNeeded: bits >> 32)
        id = number
        maxRunningBits = UInt32(truncatingIfNeeded: bits)
        let settings = limitSettings.withLock { $0[number] }
        maxQueued = settings?.maxQueued
        shedding = settings?.shedding ?? .oldest
    }

    /// Copies of one limit are equal, whatever their settings: a limit is its number.
    /// May be called from any thread.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.id == rhs.id }

    /// Hashes the limit's number. May be called from any thread.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// `limit #N (maxRunning M)`, with `maxQueued Q, shed S` when bounded.
    public var description: String {
        guard let maxQueued else { return "limit #\(id) (maxRunning \(maxRunning))" }
        return "limit #\(id) (maxRunning \(maxRunning), maxQueued \(maxQueued), shed \(shedding))"
    }
}

/// How a limit made with `maxQueued` or `fairness` queues, by the limit's number: a limit
/// rebuilt from its word (`init?(bits:)`), and a registry making the limit's queue, find it
/// here. A pthread mutex (`Locked`), which ThreadSanitizer sees; limits are made on any thread.
private let limitSettings = Locked<[UInt32: ConcurrencyLimit.Settings]>([:])

extension ConcurrencyLimit {
    /// What `limitSettings` keeps of one limit.
    struct Settings {
        let maxQueued: Int?
        let shedding: Shedding
        let fairness: Fairness?
    }

    /// How a limit's queue shares the places among groups of keys.
    ///
    /// Immutable; may be used on any thread.
    public struct Fairness: Sendable {
        /// The group of a slot's key.
        let group: @Sendable (any Hashable & Sendable) -> AnyHashable

        /// Round-robin shares: the queue serves the groups that have generations waiting in turn,
        /// one generation each, and each group's generations in their own order (by priority,
        /// then by arrival). One tenant's burst then waits behind itself, not in front of the
        /// others: a quiet tenant's run starts within one turn of the groups (among generations
        /// of one priority: a higher priority still goes first). `group` is called
        /// on the loop thread once per queued generation, with the slot's key; it must not
        /// block. A registry whose key type is not `Key` puts every key of it in one group.
        ///
        /// - Note: May be called from any thread.
        public static func roundRobin<Key: Hashable & Sendable, Group: Hashable & Sendable>(
            by group: @escaping @Sendable (Key) -> Group
        ) -> Fairness {
            Fairness { key in
                guard let key = key as? Key else { return AnyHashable(OtherKeyType()) }
                return AnyHashable(group(key))
            }
        }
    }

    /// The one group of the keys of a registry whose key type a fairness does not take.
    private struct OtherKeyType: Hashable {}
}

/// The number the next `ConcurrencyLimit` takes.
private let nextConcurrencyLimitID = Atomic<UInt32>(0)
