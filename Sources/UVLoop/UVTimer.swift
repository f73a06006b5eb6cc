import CLibUV

/// A one-shot libuv timer (`uv_timer_t`), allocated once and re-armed without allocating.
///
/// `start(at:)` never fires before its deadline: libuv counts in whole milliseconds of loop
/// time, so the deadline is rounded up, and the callback re-checks `uv_hrtime` (one reading
/// shared by the timers of a timer phase, so that equal deadlines fire in start order; read
/// again after a timer is armed between phases) and waits one more millisecond in the rare case
/// the loop's cached time ran ahead of the deadline's.
/// For example, a timer started at 10.2 ms for 5 ms (deadline 15.2 ms) fires at the first loop
/// turn whose time is 16 ms or later.
///
/// Loop thread only: create it with `UVLoop.makeUVTimer` and use it on that loop's thread.
/// While the timer is open, every member checks that and traps elsewhere (`preconditionInLoop`);
/// a closed timer touches no loop state, so `start` then only throws and `stop`/`close` do
/// nothing, on any thread. Dropping the last reference closes the handle.
public final class UVTimer: LoopTimer {
    private unowned let loop: UVLoop
    // libuv needs the handle at a stable address until its close callback frees it.
    private var handle: UnsafeMutablePointer<uv_timer_t>?
    /// Released at `close()`, so that a callback holding its own timer (to re-arm it) does
    /// not keep the two alive once the timer is closed or the loop shut down.
    private var onFire: (() -> Void)?
    private var deadline: UInt64 = 0
    private var closedByShutdown = false
    /// A zero-timeout start made during libuv's timer phase, waiting for that phase to end.
    private var deferredStart = false

    /// - Throws: `LoopError` `.calledOffLoopThread`, `.shutDown` (naming `UVLoop.makeTimer`) or
    ///   `uv_timer_init`'s error.
    init(loop: UVLoop, onFire: @escaping () -> Void) throws(LoopError) {
        self.loop = loop
        self.onFire = onFire
        let handle = try UVHandle.open(uv_timer_t.self, on: loop, operation: "UVLoop.makeTimer")
        self.handle = handle
        UVHandle.attach(self, to: handle)
    }

    deinit {
        close()
    }

    /// Arms the timer `delay` from now (`uv_hrtime`), re-arming it if it is running.
    ///
    /// - Throws: `LoopError.handleClosed` after `close()`, `.shutDown` after the loop's shutdown.
    /// - Note: Loop thread only (checked: traps elsewhere while the timer is open).
    @inline(__always)
    public func start(after delay: Duration) throws(LoopError) {
        let now = uv_hrtime()
        try arm(deadline: LoopInstant(nanoseconds: now).advanced(by: delay).nanoseconds, now: now)
    }

    /// Arms the timer for `deadline`, never firing before it; re-arms it if it is running. A
    /// deadline already passed fires within a millisecond, after timers started earlier for it.
    ///
    /// - Throws: `LoopError.handleClosed` after `close()`, `.shutDown` after the loop's shutdown.
    /// - Note: Loop thread only (checked: traps elsewhere while the timer is open).
    public func start(at deadline: LoopInstant) throws(LoopError) {
        try arm(deadline: deadline.nanoseconds, now: uv_hrtime())
    }

    @inline(__always)
    private func arm(deadline: UInt64, now: UInt64) throws(LoopError) {
        guard let handle else { throw closedError("UVTimer.start") }
        loop.preconditionInLoop()
        self.deadline = deadline
        // A deadline of now (`start(after: .zero)`) fires on the next turn. Any other is
        // rounded up to a whole millisecond of loop time (libuv's unit, and never earlier than
        // the deadline), one already passed too: a timer started after its deadline passed is
        // then due with the timers started earlier for the same deadline, and after them
        // (libuv orders equal due times by start), instead of before them at the loop's older
        // cached time. Huge deadlines saturate (libuv clamps loop time + timeout itself).
        let timeout: UInt64
        if deadline == now {
            timeout = 0
        } else {
            let deadlineMilliseconds = deadline / 1_000_000 + (deadline % 1_000_000 == 0 ? 0 : 1)
            let loopNow = uv_now(loop.uvLoop)
            timeout = deadlineMilliseconds > loopNow ? deadlineMilliseconds - loopNow : 0
        }
        if timeout == 0 && loop.inTimerPhase {
            // libuv 1.44 runs a timer that is started with timeout 0 during the timer phase in
            // that same phase (it has no "collect due timers first" step), so a callback that
            // re-arms itself for "now" would starve the rest of the loop. Start it once the
            // phase is over instead: it then fires on the next turn, like any due timer.
            uv_timer_stop(handle)
            if !deferredStart {
                deferredStart = true
                loop.runAfterTimerPhase { [weak self] in
                    guard let self, self.deferredStart, let handle = self.handle else { return }
                    self.deferredStart = false
                    self.loop.forgetTimerPhaseNow()
                    uv_timer_start(handle, uvTimerFired, 0, 0)
                }
            }
            return
        }
        deferredStart = false
        if !loop.inTimerPhase { loop.forgetTimerPhaseNow() }
        uv_timer_start(handle, uvTimerFired, timeout, 0)
    }

    /// Stops the timer; does nothing if it is stopped or closed.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the timer is open).
    public func stop() {
        guard let handle else { return }
        loop.preconditionInLoop()
        deferredStart = false
        uv_timer_stop(handle)
    }

    /// Whether the timer is armed. Loop thread only (checked: traps elsewhere while the timer
    /// is open).
    public var isActive: Bool {
        guard let handle else { return false }
        loop.preconditionInLoop()
        return deferredStart || uv_is_active(clibuv_timer_as_handle(handle)) != 0
    }

    /// Stops the timer and closes its handle (freed in the close callback). Idempotent.
    ///
    /// - Note: Loop thread only (checked: traps elsewhere while the timer is open; off the
    ///   loop thread `uv_close` would race the loop, as a registry released mid-shutdown once
    ///   did).
    public func close() {
        guard let handle else { return }
        loop.preconditionInLoop()
        deferredStart = false
        self.handle = nil
        onFire = nil
        UVHandle.close(handle)
    }

    /// Closes the handle at loop shutdown; later starts throw `LoopError.shutDown`.
    func closeForShutdown() {
        closedByShutdown = true
        close()
    }

    private func closedError(_ operation: String) -> LoopError {
        LoopError(closedByShutdown ? .shutDown : .handleClosed, operation: operation)
    }

    fileprivate func fire() {
        let now = loop.timerPhaseNow()
        if now < deadline, let handle {
            // The loop's cached millisecond clock ran ahead of uv_hrtime by less than a
            // millisecond; wait one more tick rather than fire early.
            uv_timer_start(handle, uvTimerFired, 1, 0)
            return
        }
        onFire?()
    }
}

private let uvTimerFired: uv_timer_cb = { handle in
    guard let timer = UVHandle.owner(UVTimer.self, of: handle!.pointee.data) else { return }
    let loop = UVHandle.loop(of: handle!.pointee.loop)
    loop.inTimerPhase = true
    timer.fire()
    loop.inTimerPhase = false
}
