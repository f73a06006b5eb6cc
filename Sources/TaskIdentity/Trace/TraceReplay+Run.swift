import TaskLoopCore

extension TraceReplay {
    /// Replays the declarations under `settings` on a fresh `TestLoop` registry, in virtual
    /// time, and returns what its runs came to, measured from its own trace by the rules that
    /// give `recordedFigures`. Each run is a Swift task that waits its backend time on the
    /// loop's clock, then commits; a new identity cancels it, as a backend call would be.
    ///
    /// Runs on the calling thread, and blocks it until the replay is over: far faster than the
    /// trace's real time (docs/REPLAY.md measures it), but it does the work of every run.
    /// Call it from a thread that may block (not a loop's, nor a cooperative pool's for long).
    ///
    /// - Throws: `RegistryError.invalidDuration` or `.invalidConcurrencyLimit` for settings no
    ///   registry accepts (a negative duration, a limit below 1).
    public func replay(with settings: Settings) throws(RegistryError) -> Figures {
        let start = declarations.first?.time ?? 0
        let loop = TestLoop(startingAt: LoopInstant(nanoseconds: start))
        let registry = TaskRegistry<String>(loop: loop)
        let limit = try settings.maxRunning.map { count throws(RegistryError) in try ConcurrencyLimit(maxRunning: count)
        }
        // Windows close as late as the recorded loop closed them (`recordedTimerLateness`).
        let debounce = settings.debounce > .zero ? settings.debounce + recordedTimerLateness : settings.debounce
        let throttle = settings.throttle > .zero ? settings.throttle + recordedTimerLateness : settings.throttle
        let template = try TaskTemplate<String>(
            debounce: debounce, maxWait: settings.maxWait, throttle: throttle, limit: limit
        ) { [self] task, context in
            let identity = context.id(as: String.self) ?? ""
            let time = backendTime(task: task, identity: identity, settings.backend)
            try await context.clock.sleep(for: .nanoseconds(Int64(clamping: time)))
            context.commit {}
        }
        // Room for every event a run can leave: declared, window, queue, start, commit, end.
        try registry.startTrace(capacity: max(1_024, declarations.count * 8))
        for declaration in declarations {
            loop.advance(to: LoopInstant(nanoseconds: declaration.time))
            if let identity = declaration.identity {
                try registry.task(declaration.task, id: identity, template: template)
            } else {
                try registry.remove(declaration.task)
            }
        }
        // Every window, queue and run to its end.
        loop.advance(by: .zero)
        while let next = loop.nextDeadline { loop.advance(to: next) }
        let trace = try registry.stopTrace()
        registry.startShutdown()
        loop.run()
        loop.shutdown()
        return TraceLedger(events: trace?.events ?? []).figures()
    }
}
