import CLibUV
import Synchronization

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A libuv event loop on a thread of its own: a Swift `TaskExecutor` (with a `SerialExecutor`
/// for actors as `executor`), a clock, timers, TCP sockets and signal watchers.
///
/// ```swift
/// let loop = UVLoop(name: "io")
/// try loop.start()
/// let value = try await Task(executorPreference: loop) {
///     try await loop.clock.sleep(for: .milliseconds(10))   // a libuv timer
///     return 42                                            // still on the loop thread
/// }.value
/// try loop.syncShutdown()
/// ```
///
/// How work reaches the loop: a job or closure enqueued on the loop thread goes to a local
/// queue with no lock; from any other thread it goes through a locked cross-thread queue, and
/// only the first item of a batch pays for a wake-up (`uv_async_send`). Within a turn, higher
/// task priorities run first.
///
/// Lifecycle: `notStarted → starting → running → shutdownRequested → shuttingDown → shutDown`
/// (see `Lifecycle`). Shutdown wakes sleeping tasks
/// with `CancellationError`, closes every handle through `uv_close` (freed in its close
/// callback) and checks that `uv_loop_close` returns 0. After shutdown, `execute`, `makeTimer`
/// and sleeps throw `LoopError.shutDown`; jobs the runtime still enqueues (tasks finishing)
/// run on the enqueuing thread, one at a time, so no task is left hanging.
///
/// Thread safety: the class is `Sendable`; each member says which thread may call it.
///
/// Unchecked `Sendable`: shared state is behind `crossThread`'s lock or atomic; the rest is loop-thread only.
public final class UVLoop: TaskLoop, LoopJobSink, @unchecked Sendable, CustomStringConvertible {
    /// The loop's name, used in messages.
    public let name: String
    /// Where the loop's life and swallowed errors go (a swift-log logger with the Logging trait).
    let log: LibraryLog

    /// State shared with other threads, guarded by `crossThread`.
    struct CrossThreadState {
        var incoming: [(work: LoopWork, priority: UInt8)] = []
        var wakeupPending = false
        var trampolineRunning = false
        var shutdownWaiters: [UnsafeContinuation<Void, Never>] = []
    }

    let crossThread = Locked(CrossThreadState())
    /// Changed only holding `crossThread`'s lock (see `Lifecycle`); read from anywhere.
    let lifecycle = Atomic<Lifecycle>(.notStarted)
    /// The shutdown hooks and the sleeps' scheduler (see `TaskLoop.services`). May be read from
    /// any thread.
    public let services = LoopServices()
    let loopThreadID = Atomic<UInt>(0)
    let liveHandles = Atomic<Int>(0)
    let loopCloseStatus = Atomic<Int32>(Int32.min)
    let stopped = OneShotSignal()
    let started = OneShotSignal()
    var serialExecutor: LoopSerialExecutor<UVLoop>!

    // Loop-thread state. The starting thread initialises it before the loop thread exists.
    // libuv structures at stable addresses, freed in deinit after uv_loop_close.
    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    let wakeup: UnsafeMutablePointer<uv_async_t>
    let idle: UnsafeMutablePointer<uv_idle_t>
    // @exclusivity(unchecked), these six: loop-thread only, never accessed overlapping; no dynamic check per job.
    @exclusivity(unchecked) var local = PriorityWorkQueue()
    @exclusivity(unchecked) var idleRunning = false
    @exclusivity(unchecked) var runningLocalWork = false
    @exclusivity(unchecked) var pollingCrossThread = false
    @exclusivity(unchecked) var drainBuffer: [(work: LoopWork, priority: UInt8)] = []
    /// True while a timer callback runs (libuv's timer phase). Loop thread only.
    @exclusivity(unchecked) var inTimerPhase = false
    /// One reading of `uv_hrtime` per loop time (libuv's cached millisecond clock, fixed for a
    /// turn's timer phase), for `timerPhaseNow()`. Loop thread only, like the flags above.
    @exclusivity(unchecked) var timerPhaseClock: (loopTime: UInt64, nanoseconds: UInt64) = (.max, 0)

    /// The instant that timers firing in this turn judge their deadlines by: `uv_hrtime` read
    /// once per loop time, so that timers due together get one verdict, and equal deadlines fire
    /// in the order they were started however long each callback takes (a reading per callback
    /// let time pass between them: a slow callback made the next timer of the same deadline due
    /// while an earlier one had waited one more millisecond). Loop thread only.
    @inline(__always)
    func timerPhaseNow() -> UInt64 {
        let loopTime = uv_now(uvLoop)
        if timerPhaseClock.loopTime != loopTime { timerPhaseClock = (loopTime, uv_hrtime()) }
        return timerPhaseClock.nanoseconds
    }

    /// A timer was armed between timer phases, its deadline read from `uv_hrtime` now: the
    /// next phase must read the clock again, even within the same loop millisecond. A reading
    /// kept from an earlier turn of that millisecond is older than the deadline, and a timer
    /// armed for "now" waited a whole millisecond more (every loop turn of a benchmark's
    /// producer took 1.1 ms: W2 at 0.9M changes/s instead of 4M). Loop thread only.
    @inline(__always)
    func forgetTimerPhaseNow() { timerPhaseClock.loopTime = .max }

    /// The most jobs one turn runs before letting libuv poll for I/O and timers, so that a task
    /// that keeps re-enqueueing itself cannot starve them.
    static let jobsPerTurn = 16_384

    /// The handles the loop keeps open for itself until the very end of shutdown: the wake-up
    /// (`uv_async_t`) and the idle handle. While shutting down, a live-handle count at this
    /// value means every timer, socket and signal watcher has been freed.
    static let ownHandleCount = 2

    /// Creates a loop that is not running yet; call `start()`.
    ///
    /// May be called from any thread.
    /// - Parameter name: used in messages and descriptions.
    public convenience init(name: String = "uv-loop") {
        self.init(name: name, log: LibraryLog())
    }

    init(name: String, log: LibraryLog) {
        self.name = name
        self.log = log
        uvLoop = .allocate(capacity: 1)
        wakeup = .allocate(capacity: 1)
        idle = .allocate(capacity: 1)
        serialExecutor = LoopSerialExecutor(loop: self)
    }

    deinit {
        // First: an executor kept past the loop must not reach it, and actors' jobs still queued
        // (a loop that never started) run on it instead of being lost.
        let queued = crossThread.withLock { state in
            defer { state.incoming = [] }
            return state.incoming
        }
        serialExecutor.loopDeinitialising(leftovers: queued.compactMap(\.work.serialJob))
        // The loop thread holds a strong reference until it exits, so a loop that was started
        // is always shut down by the time it is deinitialised.
        let final = lifecycle.load(ordering: .acquiring)
        assert(final == .notStarted || final == .shutDown, "BUG DETECTED: \(self) deinitialised while \(final)")
        uvLoop.deallocate()
        wakeup.deallocate()
        idle.deallocate()
    }

    /// `UVLoop(name)`.
    public var description: String { "UVLoop(\(name))" }

    // MARK: - TaskLoop

    /// `uv_hrtime()`: the monotonic clock in nanoseconds. May be called from any thread.
    public var now: LoopInstant { LoopInstant(nanoseconds: uv_hrtime()) }

    /// Whether the calling thread is this loop's thread. May be called from any thread.
    public var inLoop: Bool {
        let id = loopThreadID.load(ordering: .relaxed)
        return id != 0 && id == currentThreadID()
    }

    /// Runs `work` on the loop thread; see `TaskLoop.execute`.
    ///
    /// - Throws: `LoopError.notStarted` before `start()`, `LoopError.shutDown` once shutdown
    ///   has begun.
    /// - Note: May be called from any thread.
    public func execute(_ work: @escaping @Sendable () -> Void) throws(LoopError) {
        if inLoop {
            guard !hasBegunShutdown else { throw LoopError(.shutDown, operation: "UVLoop.execute") }
            enqueueLocal(.closure(work), priority: closurePriority)
            return
        }
        try crossThread.withLock { (state) throws(LoopError) in
            switch lifecycle.load(ordering: .relaxed) {
            case .notStarted, .starting: throw LoopError(.notStarted, operation: "UVLoop.execute")
            case .shutdownRequestedWhileStarting, .shutdownRequested, .shuttingDown, .shutDown:
                throw LoopError(.shutDown, operation: "UVLoop.execute")
            case .running:
                state.incoming.append((.closure(work), closurePriority))
                wakeLoopLocked(&state)
            }
        }
    }

    /// Creates a stopped libuv timer; see `TaskLoop.makeTimer`.
    ///
    /// - Note: Loop thread only.
    public func makeTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> any LoopTimer {
        try makeUVTimer(onFire)
    }

    /// Creates a stopped libuv timer with its concrete type, for callers that re-arm it on a
    /// hot path and want no existential dispatch.
    ///
    /// - Throws: `LoopError.calledOffLoopThread`, `.shutDown`, or a libuv error.
    /// - Note: Loop thread only.
    public func makeUVTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> UVTimer {
        try UVTimer(loop: self, onFire: onFire)
    }
    // MARK: - Executor

    /// Takes a job of a task that prefers this loop and runs it on the loop thread; the job is
    /// stored as is, with no closure allocated around it. (Jobs of actors pinned to the loop
    /// arrive through `executor` instead.)
    ///
    /// - Note: Called by the runtime from any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        enqueue(.taskJob(UnownedJob(job)), priority: priority)
    }

    /// Queues a job or closure from any thread: the local queue on the loop thread, the
    /// cross-thread queue elsewhere, or (after shutdown) the calling thread.
    @usableFromInline package func enqueue(_ work: LoopWork, priority: UInt8) {
        if inLoop {
            enqueueLocal(work, priority: priority)
            return
        }
        let mustRunInline = crossThread.withLock { state -> Bool in
            state.incoming.append((work, priority))
            switch lifecycle.load(ordering: .relaxed) {
            case .notStarted, .starting, .shutdownRequestedWhileStarting:
                return false  // runs when the loop thread starts
            case .running, .shutdownRequested, .shuttingDown:
                wakeLoopLocked(&state)
                return false
            case .shutDown:
                if state.trampolineRunning { return false }
                state.trampolineRunning = true
                return true
            }
        }
        if mustRunInline { runShutDownTrampoline() }
    }

    /// The loop's serial executor, for actors that pin themselves to it:
    /// `nonisolated var unownedExecutor: UnownedSerialExecutor { loop.executor.asUnownedSerialExecutor() }`.
    /// Its jobs run on the loop thread, isolated to it.
    ///
    /// May be read from any thread.
    public var executor: any SerialExecutor { serialExecutor.handOut() }

    @usableFromInline package var unownedSerialExecutor: UnownedSerialExecutor {
        serialExecutor.asUnownedSerialExecutor()
    }

    /// The loop as a task executor, for `Task(executorPreference: loop)`; such a task retains
    /// the loop.
    ///
    /// May be called from any thread.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }
}
