import TaskLoopCore

/// A registry's interned options (one `TaskOptions` per distinct set of values) and the loop
/// timers they share: one deadline list per delay for debounce windows, progress signals,
/// delayed synchronous runs and time limits. It also counts the tasks' own timers (throttle,
/// retry, refresh) that are open, so that every timer the registry holds is counted here.
///
/// Loop thread only, inside its core.
final class OptionsTable {
    private var interned: [TaskOptions.Values: TaskOptions] = [:]
    private var debounceWindows: [UInt64: DebounceWindows] = [:]
    private var progressQueues: [UInt64: DeadlineQueue<ProgressEntry>] = [:]
    private var synchronousQueues: [UInt64: DeadlineQueue<SynchronousRunEntry>] = [:]
    private var timeLimitLists: [UInt64: TimeLimits] = [:]
    private var maxWaitQueues: [UInt64: DeadlineQueue<MaxWaitEntry>] = [:]
    /// The tasks' own timers open (in their records' `RareTaskState`).
    private(set) var taskTimersOpen = 0
    /// Some options interned so far use rare options (a time limit, a concurrency limit,
    /// retries, refreshes, shared runs), so that a run's end may have rare state to release in
    /// its record (`RareTaskState`). Never reset: a registry that once used them pays one more
    /// load per end. Unchecked exclusivity: loop thread only, read on every run's end, never
    /// across a call.
    @exclusivity(unchecked) private(set) var anyRare = false

    /// The interned options for `values`, made with their deadline lists on first use.
    /// `template`: the template declared, if any; `core`: whose handlers the lists' timers
    /// call; `limitQueue`: the registry's queue of a concurrency limit; `defaultLimit`: the
    /// limit of options that name none.
    func options(
        for values: TaskOptions.Values, template: AnyObject?, core: RegistryCore,
        limitQueue: (ConcurrencyLimit) -> LimitQueue, defaultLimit: ConcurrencyLimit?
    ) throws(LoopError) -> TaskOptions {
        if let options = interned[values] { return options }
        let loop = core.loop
        var windows: DebounceWindows?
        let debounce = UInt64(values.debounce.clampedNanoseconds)
        if debounce > 0 {
            windows = try list(in: &debounceWindows, delay: debounce, loop: loop) { [unowned core] in
                core.debounceDue($0)
            }
        }
        var progressQueue: DeadlineQueue<ProgressEntry>?
        if let delay = values.progressDelay.map({ UInt64($0.clampedNanoseconds) }) {
            progressQueue = try list(in: &progressQueues, delay: delay, loop: loop) { [unowned core] in
                core.progressDue($0)
            }
        }
        var synchronousQueue: DeadlineQueue<SynchronousRunEntry>?
        let synchronousDelay = UInt64(values.synchronousDelay.clampedNanoseconds)
        if synchronousDelay > 0 {
            synchronousQueue = try list(in: &synchronousQueues, delay: synchronousDelay, loop: loop) {
                [unowned core] in core.synchronousRunDue($0)
            }
        }
        var timeLimits: TimeLimits?
        // A synchronous run's action, called after its delay, ends the run before a limit at
        // least that long could pass: such a limit needs no list and no timer.
        if let limit = values.timeout.map({ UInt64($0.clampedNanoseconds) }),
            synchronousDelay == 0 || limit < synchronousDelay
        {
            timeLimits = try list(in: &timeLimitLists, delay: limit, loop: loop) { [unowned core] in
                core.timeLimitPassed($0)
            }
        }
        var maxWaitQueue: DeadlineQueue<MaxWaitEntry>?
        // A bound on debounce windows: only where there are windows to bound.
        if debounce > 0, let maxWait = RareOptions.options(numbered: values.rareNumber)?.maxWait {
            maxWaitQueue = try list(in: &maxWaitQueues, delay: UInt64(maxWait.clampedNanoseconds), loop: loop) {
                [unowned core] in core.maxWaitDue($0)
            }
        }
        let limit = ConcurrencyLimit(bits: values.limitBits) ?? defaultLimit
        if timeLimits != nil || limit != nil || values.rareNumber != 0 || values.sharesRuns { anyRare = true }
        let options = TaskOptions(
            values: values, debounceWindows: windows, progressQueue: progressQueue,
            synchronousQueue: synchronousQueue, timeLimits: timeLimits,
            limitQueue: limit.map(limitQueue), maxWaitQueue: maxWaitQueue, template: template)
        interned[values] = options
        return options
    }

    /// The list of `delay` in `table`, made (with its loop timer) on first use.
    private func list<List: DeadlineList>(
        in table: inout [UInt64: List], delay: UInt64, loop: any TaskLoop, onDue: @escaping (List.Due) -> Void
    ) throws(LoopError) -> List {
        if let list = table[delay] { return list }
        let list = List(delayNanoseconds: delay)
        try list.attach(to: loop, onDue: onDue)
        table[delay] = list
        return list
    }

    /// A task's own timer opened.
    func taskTimerOpened() { taskTimersOpen += 1 }

    /// A task's own timer closed.
    func taskTimerClosed() { taskTimersOpen -= 1 }

    /// The timers open: one per deadline list, and the tasks' own.
    var openTimerCount: Int {
        debounceWindows.count + progressQueues.count + synchronousQueues.count + timeLimitLists.count
            + maxWaitQueues.count + taskTimersOpen
    }

    /// The debounce windows, for tests.
    var debounceWindowsForTesting: [DebounceWindows] { Array(debounceWindows.values) }

    /// The time-limit lists, for tests.
    var timeLimitListsForTesting: [TimeLimits] { Array(timeLimitLists.values) }

    /// Closes every deadline list and forgets the options. Only after every record was
    /// removed: removal closed the tasks' own timers and took each record's nodes out of the
    /// lists.
    func closeAll() {
        for windows in debounceWindows.values { windows.close() }
        for queue in progressQueues.values { queue.close() }
        for queue in synchronousQueues.values { queue.close() }
        for list in timeLimitLists.values { list.close() }
        for queue in maxWaitQueues.values { queue.close() }
        maxWaitQueues = [:]
        debounceWindows = [:]
        progressQueues = [:]
        synchronousQueues = [:]
        timeLimitLists = [:]
        interned = [:]
    }
}
