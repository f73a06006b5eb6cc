#if NIO
    import NIOCore
    import TaskLoopCore

    /// A one-shot timer of a `NIOTaskLoop`: a task scheduled on the event loop with
    /// `scheduleTask(deadline:)`, re-armed by cancelling it and scheduling a new one.
    ///
    /// Unlike `UVTimer`, every `start` allocates (NIO's scheduled task, its promise and a
    /// closure): NIO has no re-armable timer handle. NIO runs a scheduled task once its deadline
    /// has passed, never before, and tasks with equal deadlines in the order they were
    /// scheduled, which is the order `LoopTimer` promises.
    ///
    /// A task that NIO has already taken off its queue for this tick cannot be cancelled, so
    /// each arming gets a number and a firing that is not the latest arming's is ignored: a
    /// timer re-armed or stopped by another timer's callback in the same tick never fires for
    /// its old deadline.
    ///
    /// Event loop thread only: create it with `NIOTaskLoop.makeTimer` and use it on that event
    /// loop's thread. Dropping the last reference closes it.
    final class NIOLoopTimer: LoopTimer {
        /// Strong: the loop keeps its timers unretained (see `NIOTaskLoop.openTimers`), so
        /// there is no cycle, and the loop lives as long as a timer that may reach it.
        private let loop: NIOTaskLoop
        /// Released at `close()`, as `UVTimer` does: a callback holding its timer is no cycle.
        private var onFire: (() -> Void)?
        private var scheduled: Scheduled<Void>?
        /// The number of the latest arming; a firing of an earlier one is stale.
        private var arming: UInt64 = 0
        private var closed = false
        private var closedByShutdown = false

        init(loop: NIOTaskLoop, onFire: @escaping () -> Void) {
            self.loop = loop
            self.onFire = onFire
        }

        deinit { close() }

        func start(after delay: Duration) throws(LoopError) {
            try start(at: loop.now.advanced(by: delay))
        }

        func start(at deadline: LoopInstant) throws(LoopError) {
            guard !closed else {
                throw LoopError(closedByShutdown ? .shutDown : .handleClosed, operation: "NIOLoopTimer.start")
            }
            scheduled?.cancel()
            arming &+= 1
            let thisArming = arming
            // Weak: a dropped timer closes (deinit) and must not be kept alive by its task.
            scheduled = loop.eventLoop.assumeIsolated().scheduleTask(
                deadline: .uptimeNanoseconds(deadline.nanoseconds)
            ) { [weak self] in
                guard let self, !self.closed, self.arming == thisArming else { return }
                self.scheduled = nil
                self.onFire?()
            }
        }

        func stop() {
            scheduled?.cancel()
            scheduled = nil
            // Also makes a firing already taken off NIO's queue stale.
            arming &+= 1
        }

        var isActive: Bool { scheduled != nil }

        func close() {
            guard !closed else { return }
            stop()
            closed = true
            onFire = nil
            loop.timerClosed(self)
        }

        /// Closes the timer at the loop's shutdown; later starts throw `LoopError.shutDown`.
        func closeForShutdown() {
            closedByShutdown = true
            close()
        }
    }
#endif
