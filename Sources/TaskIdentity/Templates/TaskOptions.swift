import TaskLoopCore

/// Declaration options, interned per registry so that a record holds one reference to them,
/// and so that the debounce and progress queues are looked up once per distinct options, not
/// once per change.
///
/// Unchecked `Sendable`: every stored property is a `let`; the deadline queues they point to
/// are mutable, and are used only on the registry's loop thread.
@usableFromInline
final class TaskOptions: @unchecked Sendable {
    /// The options as declared. Durations stay `Duration`s here, so that comparing a
    /// declaration's options with a record's costs no conversion; nanoseconds are computed
    /// once, when the options are interned.
    @usableFromInline
    struct Values: Hashable, Sendable {
        // In an order that packs: the two bytes sit in the padding after `progressDelay`'s
        // tag, which keeps the whole at 128 bytes. Past that, copying a template's options on
        // every declaration becomes a `memcpy` call (29 instructions per W1 change).
        @usableFromInline var debounce: Duration
        @usableFromInline var throttle: Duration
        @usableFromInline var progressDelay: Duration?
        @usableFromInline var priority: UInt8
        @usableFromInline var policy: PolicyKind
        /// A slot declaring an identity equal to one running in another slot of the same
        /// template joins that run (templates only). In the padding after `policy`.
        @usableFromInline var sharesRuns: Bool
        /// A run's time limit, from its start; nil for none.
        @usableFromInline var timeout: Duration?
        /// The number of the retry policy, `staleAfter`, `refreshEvery` and `maxWait` (`RareOptions`), 0
        /// when none is set: four bytes, in the padding after `timeout`'s tag (see the order
        /// above).
        @usableFromInline var rareNumber: UInt32
        /// The concurrency limit whose queue a run waits in when its runs are all taken
        /// (`ConcurrencyLimit.bits`); 0 for the registry's (`RegistryConfiguration.concurrencyLimit`),
        /// if it has one. Eight bytes, not an optional limit's seventeen (see the order above).
        @usableFromInline var limitBits: UInt64
        /// How long a synchronous run stays `running` before its action is called; zero for
        /// one called when it starts, and for Swift-task actions.
        @usableFromInline var synchronousDelay: Duration
        /// Where a Swift-task action runs (see `ActionExecutor`).
        @usableFromInline var executor: ActionExecutor

        /// - Throws: `RegistryError.invalidDuration` for a negative duration, or a time limit
        ///   under a nanosecond.
        @inlinable
        init(
            priority: TaskPriority, policy: RestartPolicy, debounce: Duration,
            maxWait: Duration? = TaskOptionDefaults.maxWait, throttle: Duration,
            progressDelay: Duration?, timeout: Duration? = TaskOptionDefaults.timeout,
            limit: ConcurrencyLimit? = TaskOptionDefaults.limit,
            retry: RetryPolicy? = TaskOptionDefaults.retry,
            staleAfter: Duration? = TaskOptionDefaults.staleAfter,
            refreshEvery: Duration? = TaskOptionDefaults.refreshEvery,
            sharesRuns: Bool = false,
            synchronousDelay: Duration = TaskOptionDefaults.synchronousDelay,
            executor: ActionExecutor = TaskOptionDefaults.executor
        ) throws(RegistryError) {
            if debounce < .zero { throw RegistryError.invalidDuration(name: "debounce", debounce) }
            if throttle < .zero { throw RegistryError.invalidDuration(name: "throttle", throttle) }
            if let progressDelay, progressDelay < .zero {
                throw RegistryError.invalidDuration(name: "progressDelay", progressDelay)
            }
            if synchronousDelay < .zero { throw RegistryError.invalidDuration(name: "after", synchronousDelay) }
            // Below a nanosecond is zero on the loop's clock: no limit at all, not a limit of none.
            if let timeout, timeout < .nanoseconds(1) { throw RegistryError.invalidDuration(name: "timeout", timeout) }
            self.sharesRuns = sharesRuns
            self.priority = priority.rawValue
            self.policy = PolicyKind(policy)
            var appendMaxQueued: Int?
            if case .appendInOrder(let maxQueued) = policy {
                guard maxQueued >= 1 else { throw RegistryError.invalidAppendQueue(maxQueued) }
                appendMaxQueued = maxQueued
            }
            self.debounce = debounce
            self.throttle = throttle
            self.progressDelay = progressDelay
            self.timeout = timeout
            self.limitBits = limit?.bits ?? 0
            if let staleAfter, staleAfter < .zero {
                throw RegistryError.invalidDuration(name: "staleAfter", staleAfter)
            }
            if let refreshEvery, refreshEvery < .nanoseconds(1) {
                throw RegistryError.invalidDuration(name: "refreshEvery", refreshEvery)
            }
            if let maxWait, maxWait < .nanoseconds(1) { throw RegistryError.invalidDuration(name: "maxWait", maxWait) }
            // Tested here, inline: a declaration without these options makes no call.
            self.rareNumber =
                retry == nil && staleAfter == nil && refreshEvery == nil && maxWait == nil && appendMaxQueued == nil
                ? 0
                : RareOptions.number(
                    retry: retry, staleAfter: staleAfter, refreshEvery: refreshEvery, maxWait: maxWait,
                    appendMaxQueued: appendMaxQueued)
            self.synchronousDelay = synchronousDelay
            self.executor = executor
        }
    }

    @usableFromInline let values: Values
    /// `values`' retry policy, if any.
    let retry: RetryPolicy?
    /// `values`' `staleAfter` and `refreshEvery`, in nanoseconds, if set.
    let staleAfterNanoseconds: UInt64?
    let refreshEveryNanoseconds: UInt64?
    /// `values`' `maxWait` in nanoseconds, 0 for none (or no debounce: nothing to bound).
    let maxWaitNanoseconds: UInt64
    /// How many identities may wait behind the run under `appendInOrder`, 0 under other policies.
    let appendMaxQueued: Int
    /// The queue of the debounce windows' bounds (`maxWait`), if there is one.
    let maxWaitQueue: DeadlineQueue<MaxWaitEntry>?
    /// `values`' concurrency limit, if it names one.
    var limit: ConcurrencyLimit? { ConcurrencyLimit(bits: values.limitBits) }
    /// `values` in nanoseconds.
    let debounceNanoseconds: UInt64
    let throttleNanoseconds: UInt64
    let progressDelayNanoseconds: UInt64?
    let priority: TaskPriority
    /// The debounce windows for `values.debounce`, if it is not zero.
    let debounceWindows: DebounceWindows?
    /// The progress queue for `values.progressDelay`, if any.
    let progressQueue: DeadlineQueue<ProgressEntry>?
    /// The queue of synchronous runs waiting out `values.synchronousDelay`, if it is not zero.
    let synchronousQueue: DeadlineQueue<SynchronousRunEntry>?
    /// The list of the time limits (`values.timeout`) of runs under way, if there is one.
    let timeLimits: TimeLimits?
    /// The registry's queue of the concurrency limit (`values.limit`, or the registry's own),
    /// if there is one.
    let limitQueue: LimitQueue?
    /// The template whose declaration interned these options, if one did: a later declaration
    /// of the same template finds its options by identity, without comparing `values`.
    @usableFromInline let template: AnyObject?

    init(
        values: Values, debounceWindows: DebounceWindows?, progressQueue: DeadlineQueue<ProgressEntry>?,
        synchronousQueue: DeadlineQueue<SynchronousRunEntry>?, timeLimits: TimeLimits?, limitQueue: LimitQueue?,
        maxWaitQueue: DeadlineQueue<MaxWaitEntry>? = nil, template: AnyObject?
    ) {
        self.maxWaitQueue = maxWaitQueue
        self.template = template
        self.values = values
        self.debounceNanoseconds = UInt64(values.debounce.clampedNanoseconds)
        self.throttleNanoseconds = UInt64(values.throttle.clampedNanoseconds)
        self.progressDelayNanoseconds = values.progressDelay.map { UInt64($0.clampedNanoseconds) }
        self.priority = TaskPriority(rawValue: values.priority)
        self.debounceWindows = debounceWindows
        self.progressQueue = progressQueue
        self.synchronousQueue = synchronousQueue
        self.timeLimits = timeLimits
        self.limitQueue = limitQueue
        let rare = RareOptions.options(numbered: values.rareNumber)
        self.retry = rare?.retry
        self.staleAfterNanoseconds = rare?.staleAfter.map { UInt64($0.clampedNanoseconds) }
        self.refreshEveryNanoseconds = rare?.refreshEvery.map { UInt64($0.clampedNanoseconds) }
        self.maxWaitNanoseconds = maxWaitQueue?.delayNanoseconds ?? 0
        self.appendMaxQueued = rare?.appendMaxQueued ?? 0
    }
}

/// A restart policy as the options and the state machine hold it: one byte (the public
/// `RestartPolicy` carries `appendInOrder`'s bound, which the options keep with the rare
/// options). Two bits of it answer the two questions asked on every declaration in one test
/// each: whether the run in progress goes on (`keepsRun`), and whether the registry must ask
/// the core before it compares identities (`decidesBeforeComparing`).
@usableFromInline
enum PolicyKind: UInt8, Hashable, Sendable {
    case cancelPrevious = 0
    case keepRunning = 1
    case keepRunningDropNew = 2
    case appendInOrder = 3
    case awaitPrevious = 4

    @inlinable
    init(_ policy: RestartPolicy) {
        switch policy {
        case .cancelPrevious: self = .cancelPrevious
        case .awaitPrevious: self = .awaitPrevious
        case .keepRunningDropNew: self = .keepRunningDropNew
        case .keepRunning: self = .keepRunning
        case .appendInOrder: self = .appendInOrder
        }
    }

    /// A new identity leaves the run in progress alone (`keepRunning`, `appendInOrder`).
    @inline(__always)
    var keepsRun: Bool { rawValue & 1 != 0 }

    /// A declaration may be dropped or queued before it is compared with the task's identity
    /// (`keepRunningDropNew`, `appendInOrder`).
    @inlinable @inline(__always)
    var decidesBeforeComparing: Bool { rawValue & 2 != 0 }
}
