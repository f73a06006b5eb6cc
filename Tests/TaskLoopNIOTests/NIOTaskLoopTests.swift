#if NIO
    import NIOCore
    import NIOPosix
    import TaskLoopNIO
    import Testing
    import UVLoop

    @testable import TaskIdentity

    /// What actions and timer callbacks report, in the order they report it, to the test's task.
    private struct Reports: Sendable {
        let stream: AsyncStream<String>
        let continuation: AsyncStream<String>.Continuation

        init() { (stream, continuation) = AsyncStream.makeStream(of: String.self) }

        func add(_ report: String) { continuation.yield(report) }
    }

    /// A one-thread NIO event loop group with a `NIOTaskLoop` on its loop, shut down in order.
    private struct NIOHarness {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop: NIOTaskLoop

        init() { loop = NIOTaskLoop(group.next()) }

        /// Runs `body` on the event loop thread through NIO itself (works after the task
        /// loop's shutdown too, which `loop.submit` does not).
        func onEventLoop<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
            try await loop.eventLoop.submit(body).get()
        }

        func finish() async throws {
            await loop.shutdown()
            try await group.shutdownGracefully()
        }
    }

    @Suite("NIOTaskLoop: the registry on a SwiftNIO event loop", .timeLimit(.minutes(1)))
    struct NIOTaskLoopTests {
        @Test("a registry declared from another thread runs its action on the event loop's thread")
        func actionRunsOnTheEventLoop() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let registry = TaskRegistry<Int>(loop: loop)
            let reports = Reports()
            #expect(!loop.inLoop)  // the test's task: declarations are posted
            try registry.task(1, id: "q") { context in
                let before = loop.eventLoop.inEventLoop
                try await context.clock.sleep(for: .milliseconds(1))
                let after = loop.eventLoop.inEventLoop
                context.commit(result: "found")
                reports.add("on the event loop: \(before) \(after)")
            }
            // An action off the loop lands its result through the loop's serial executor.
            try registry.task(2, id: "q", executor: .global) { context in
                reports.add("off the loop: \(!loop.eventLoop.inEventLoop)")
                let landed = await context.commitOnLoop(result: "computed")
                reports.add("committed on the loop: \(landed)")
            }
            var iterator = reports.stream.makeAsyncIterator()
            var seen: Set<String> = []
            for _ in 0..<3 { seen.insert(await iterator.next()!) }
            #expect(
                seen == ["on the event loop: true true", "off the loop: true", "committed on the loop: true"])
            await registry.flush()
            let (first, second) = try await harness.onEventLoop {
                try (registry.result(of: 1, as: String.self), registry.result(of: 2, as: String.self))
            }
            #expect(first == "found")
            #expect(second == "computed")
            await registry.shutdown()
            try await harness.finish()
        }

        @Test("a changed id cancels the old run, whose late commit is dropped")
        func changedIdentityCancelsAndDropsStaleCommit() async throws {
            let harness = NIOHarness()
            let registry = TaskRegistry<String>(loop: harness.loop)
            let reports = Reports()
            try registry.task("user", id: "old") { context in
                reports.add("old started")
                // Sleeps until cancelled; then tries to land its (now stale) result anyway.
                try? await context.clock.sleep(for: .seconds(3600))
                reports.add("old committed: \(context.commit(result: "old result"))")
            }
            var iterator = reports.stream.makeAsyncIterator()
            #expect(await iterator.next() == "old started")
            try registry.task("user", id: "new") { context in
                reports.add("new committed: \(context.commit(result: "new result"))")
            }
            var ends: Set<String> = []
            for _ in 0..<2 { ends.insert(await iterator.next()!) }
            #expect(ends == ["old committed: false", "new committed: true"])
            await registry.flush()
            // Both actions reported; wait for their ends to reach the registry's books.
            var counters = try await registry.countersSnapshot()
            while counters.runningActions > 0 {
                try await harness.loop.sleep(for: .milliseconds(1))
                counters = try await registry.countersSnapshot()
            }
            #expect(counters.started == 2)
            #expect(counters.cancelled == 1)
            #expect(counters.finished == 1)
            #expect(counters.staleCommitsDropped == 1)
            let result = try await harness.onEventLoop { try registry.result(of: "user", as: String.self) }
            #expect(result == "new result")
            await registry.shutdown()
            try await harness.finish()
        }

        @Test("a burst of ids inside the debounce window runs once, for the last id")
        func debounceRunsOnceAfterABurst() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let registry = TaskRegistry<Int>(loop: loop)
            let reports = Reports()
            // The burst is declared in one job on the event loop, so every keystroke lands in
            // the window however slow the machine is: the test asserts counts, not timing.
            try await loop.submit {
                for query in ["s", "se", "sea", "sear"] {
                    try registry.task(7, id: query, debounce: .milliseconds(20)) { context in
                        reports.add("ran \(context.id(as: String.self)!)")
                    }
                }
            }
            var iterator = reports.stream.makeAsyncIterator()
            #expect(await iterator.next() == "ran sear")
            var counters = try await registry.countersSnapshot()
            while counters.liveGenerations > 0 {
                try await loop.sleep(for: .milliseconds(1))
                counters = try await registry.countersSnapshot()
            }
            #expect(counters.declared == 4)
            #expect(counters.coalesced == 3)
            #expect(counters.started == 1)
            #expect(counters.finished == 1)
            await registry.shutdown()
            try await harness.finish()
        }

        @Test("a timer re-armed for later fires at its new deadline, not its old one")
        func rearmReplacesTheDeadline() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let reports = Reports()
            let timers = try await harness.onEventLoop {
                let rearmed = try loop.makeTimer { reports.add("re-armed timer fired") }
                let witness = try loop.makeTimer { reports.add("witness fired") }
                try rearmed.start(after: .milliseconds(5))
                try witness.start(after: .milliseconds(30))
                try rearmed.start(after: .milliseconds(60))  // replaces the 5 ms deadline
                return UncheckedTimers([rearmed, witness])
            }
            var iterator = reports.stream.makeAsyncIterator()
            // Timers fire in deadline order: the witness (30 ms) comes before the re-armed
            // timer (60 ms) only if the 5 ms deadline is gone.
            #expect(await iterator.next() == "witness fired")
            #expect(await iterator.next() == "re-armed timer fired")
            let active = try await harness.onEventLoop { timers.all.map(\.isActive) }
            #expect(active == [false, false])
            try await harness.onEventLoop { for timer in timers.all { timer.close() } }
            try await harness.finish()
        }

        @Test("a stopped timer does not fire, also when stopped in the tick its deadline came due")
        func stopPreventsFiring() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let reports = Reports()
            let timers = try await harness.onEventLoop {
                let stopped = try loop.makeTimer { reports.add("stopped timer fired") }
                try stopped.start(after: .milliseconds(5))
                stopped.stop()
                // Two timers due at the same instant: NIO takes both off its queue in one tick;
                // the first one's callback stops the second, which must then not fire.
                let deadline = loop.now.advanced(by: .milliseconds(10))
                let victim = try loop.makeTimer { reports.add("victim fired") }
                let stopper = try loop.makeTimer {
                    victim.stop()
                    reports.add("stopper fired")
                }
                try stopper.start(at: deadline)
                try victim.start(at: deadline)
                let witness = try loop.makeTimer { reports.add("witness fired") }
                try witness.start(after: .milliseconds(40))
                return UncheckedTimers([stopped, victim, stopper, witness])
            }
            var iterator = reports.stream.makeAsyncIterator()
            #expect(await iterator.next() == "stopper fired")
            #expect(await iterator.next() == "witness fired")
            let active = try await harness.onEventLoop { timers.all.map(\.isActive) }
            #expect(active == [false, false, false, false])
            await loop.shutdown()
            // The loop's shutdown closed the timers still open.
            #expect(try await harness.onEventLoop { loop.openTimerCount } == 0)
            try await harness.finish()
        }

        @Test("close is final: a closed timer does not fire and cannot be started again")
        func closeIsFinal() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let reports = Reports()
            let (outcome, kept) = try await harness.onEventLoop { () -> ([String], UncheckedTimers) in
                let closed = try loop.makeTimer { reports.add("closed timer fired") }
                try closed.start(after: .milliseconds(5))
                closed.close()
                closed.close()  // idempotent
                let witness = try loop.makeTimer { reports.add("witness fired") }
                try witness.start(after: .milliseconds(20))
                var outcome: [String] = ["open timers \(loop.openTimerCount)"]
                do throws(LoopError) {
                    try closed.start(after: .zero)
                    outcome.append("started")
                } catch {
                    outcome.append("start threw \(error.code)")
                }
                // The witness is returned to keep it alive: dropping a timer closes it.
                return (outcome, UncheckedTimers([closed, witness]))
            }
            #expect(outcome == ["open timers 1", "start threw handleClosed"])
            var iterator = reports.stream.makeAsyncIterator()
            #expect(await iterator.next() == "witness fired")
            #expect(try await harness.onEventLoop { kept.all.map(\.isActive) } == [false, false])
            try await harness.finish()
        }

        @Test("a sleep on the loop's clock ends early with CancellationError when its task is cancelled")
        func sleepIsCancellable() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let sleeper = Task { try await loop.clock.sleep(for: .seconds(3600)) }
            sleeper.cancel()
            await #expect(throws: CancellationError.self) { try await sleeper.value }
            try await harness.finish()
        }

        @Test("shutting the loop down ends the registry's runs, and then the loop refuses work")
        func shutdownEndsTheRegistry() async throws {
            let harness = NIOHarness()
            let loop = harness.loop
            let registry = TaskRegistry<Int>(loop: loop)
            let reports = Reports()
            try registry.task(1, id: "long") { context in
                reports.add("started")
                do {
                    try await context.clock.sleep(for: .seconds(3600))
                    reports.add("slept to the end")
                } catch {
                    reports.add("woken: \(error is CancellationError)")
                    throw error
                }
            }
            let phases = registry.phaseUpdates(of: 1)
            var iterator = reports.stream.makeAsyncIterator()
            #expect(await iterator.next() == "started")
            await loop.shutdown()
            #expect(await iterator.next() == "woken: true")
            await registry.shutdown()
            // The phase stream ends with the registry's shutdown; its last phase is final.
            var lastPhase: TaskPhase?
            for await update in phases { lastPhase = update.phase }
            #expect(lastPhase.map { "\($0)" } == "\(TaskPhase.cancelled(.registryShutDown))")
            let (counters, isShutDown) = try await harness.onEventLoop { try (registry.counters, registry.isShutDown) }
            #expect(isShutDown)
            #expect(counters.runningActions == 0)
            #expect(counters.cancelled == 1)
            #expect(loop.isShutDown)
            #expect(throws: LoopError(.shutDown, operation: "NIOTaskLoop.execute")) { try loop.execute {} }
            #expect(throws: RegistryError.shutDown) { try registry.task(2, id: "late") { _ in } }
            await #expect(throws: LoopError.self) { try await loop.sleep(for: .milliseconds(1)) }
            let hookRanAtOnce = Reports()
            loop.onShutdown { hookRanAtOnce.add("ran") }
            hookRanAtOnce.continuation.finish()
            var hookIterator = hookRanAtOnce.stream.makeAsyncIterator()
            #expect(await hookIterator.next() == "ran")
            try await harness.finish()
        }
    }

    /// Timers carried from the event loop back to the test's task, which hands them only to
    /// closures that run on the event loop again.
    private struct UncheckedTimers: @unchecked Sendable {
        let all: [any LoopTimer]
        init(_ all: [any LoopTimer]) { self.all = all }
    }
#endif
