#if Metrics
    import MetricsTestKit
    import Testing
    import TaskIdentity
    import UVLoop

    #if canImport(Glibc)
        import Glibc
    #endif

    @Suite("Metrics trait: RegistryCounters as swift-metrics")
    struct MetricsTests {
        @Test func everyFieldIsExportedOnTheIntervalCountersByGrowthGaugesByLevel() throws {
            let metrics = TestMetrics()
            let loop = TestLoop()
            let registry = TaskRegistry<String>(loop: loop)
            let export = try registry.exportMetrics(
                prefix: "search", dimensions: [("shard", "0")], every: .seconds(1), factory: metrics)
            try registry.task("a", id: 1) { _ in }
            try registry.task("b", id: 1) { _ in try await Task.sleep(for: .seconds(3600)) }
            loop.run()
            #expect(try metrics.expectCounter("search_declared", [("shard", "0")]).totalValue == 0, "not yet exported")
            loop.advance(by: .seconds(1))
            #expect(try metrics.expectCounter("search_declared", [("shard", "0")]).totalValue == 2)
            #expect(try metrics.expectCounter("search_finished", [("shard", "0")]).totalValue == 1)
            #expect(try metrics.expectGauge("search_live_slots", [("shard", "0")]).lastValue == 2)
            #expect(try metrics.expectGauge("search_running_actions", [("shard", "0")]).lastValue == 1)
            // Every field of the one list, and nothing else.
            let exported = Set(metrics.counters.map(\.label) + metrics.recorders.map(\.label))
            #expect(exported == Set(RegistryCounters.fields.map { "search_\($0.name)" }))

            try registry.task("a", id: 2) { _ in }
            try registry.remove("b")
            loop.run()
            loop.advance(by: .seconds(1))
            // Counters grow by what grew; gauges follow the level down.
            #expect(try metrics.expectCounter("search_declared", [("shard", "0")]).totalValue == 3)
            #expect(try metrics.expectCounter("search_cancelled", [("shard", "0")]).totalValue == 1)
            #expect(try metrics.expectGauge("search_live_slots", [("shard", "0")]).lastValue == 1)

            export.stop()
            try registry.task("a", id: 3) { _ in }
            loop.run()
            loop.advance(by: .seconds(5))
            #expect(try metrics.expectCounter("search_declared", [("shard", "0")]).totalValue == 3, "stopped")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func timersRecordTimeToStartAndRunDurationByFinalPhase() throws {
            let metrics = TestMetrics()
            let loop = TestLoop()
            let registry = TaskRegistry<String>(loop: loop)
            let export = try registry.exportMetrics(
                prefix: "search", every: .seconds(60), factory: metrics, timers: true)
            // Debounced 100 ms, then runs 30 ms: 100 ms to start, 30 ms finished.
            try registry.task("user:1", name: "query", id: "s", debounce: .milliseconds(100)) { _ in
                try await loop.clock.sleep(for: .milliseconds(30))
            }
            loop.advance(by: .milliseconds(130))
            let toStart = try metrics.expectTimer("search_time_to_start", [("task", "query")])
            #expect(toStart.values == [100_000_000])
            let finished = try metrics.expectTimer("search_run_duration", [("task", "query"), ("phase", "finished")])
            #expect(finished.values == [30_000_000])

            // Restarted after 10 ms: a cancelled run's duration is to its cancellation.
            try registry.task("user:1", name: "query", id: "sw") { _ in try await loop.clock.sleep(for: .seconds(60)) }
            loop.run()
            loop.advance(by: .milliseconds(10))
            try registry.task("user:1", name: "query", id: "swi") { _ in }
            loop.run()
            let restarted = try metrics.expectTimer(
                "search_run_duration", [("task", "query"), ("phase", "cancelled(identityChanged)")])
            #expect(restarted.values == [10_000_000])
            #expect(
                toStart.values == [100_000_000, 0, 0], "undebounced generations start in the turn they are declared")
            #expect(
                try metrics.expectTimer("search_run_duration", [("task", "query"), ("phase", "finished")]).values.count
                    == 2)

            // Stopped: no more records.
            export.stop()
            try registry.task("user:1", name: "query", id: "swif") { _ in }
            loop.run()
            #expect(toStart.values.count == 3)
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aFailedAttemptBeforeItsRetryIsAFailureAndALaterExportKeepsItsTimers() throws {
            struct Boom: Error {}
            let first = TestMetrics()
            let second = TestMetrics()
            let loop = TestLoop()
            let registry = TaskRegistry<String>(loop: loop)
            let replaced = try registry.exportMetrics(prefix: "a", every: .seconds(60), factory: first, timers: true)
            let export = try registry.exportMetrics(prefix: "b", every: .seconds(60), factory: second, timers: true)
            replaced.stop()  // the second export's timers stay
            try registry.task(
                "k", id: 1, retry: RetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(10), jitter: 0)
            ) { _ in throw Boom() }
            loop.run()
            loop.advance(by: .milliseconds(10))
            #expect(
                try second.expectTimer("b_run_duration", [("task", "main"), ("phase", "failed")]).values == [0, 0])
            #expect(throws: (any Error).self) {
                try first.expectTimer("b_run_duration", [("task", "main"), ("phase", "failed")])
            }
            export.stop()
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func theLoopLagProbeFiresOnItsIntervalAndRecordsNoLagOnATestLoop() throws {
            let metrics = TestMetrics()
            let loop = TestLoop()
            let registry = TaskRegistry<String>(loop: loop)
            let export = try registry.exportMetrics(
                prefix: "p", every: .seconds(60), factory: metrics, timers: true, loopLagInterval: .milliseconds(100))
            loop.advance(by: .milliseconds(250))
            #expect(try metrics.expectTimer("p_loop_lag").values == [0, 0], "a test loop fires its timers on time")
            export.stop()
            loop.advance(by: .seconds(1))
            #expect(try metrics.expectTimer("p_loop_lag").values.count == 2, "stopped")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aBlockedLoopRecordsItsLag() async throws {
            let metrics = TestMetrics()
            let loop = UVLoop(name: "lag")
            try loop.start()
            let registry = TaskRegistry<String>(loop: loop)
            // In one loop job: the probe armed for 10 ms from now, then the loop held 100 ms, so
            // the probe fires at least 90 ms late, whatever the machine's speed.
            let export = try await loop.submit {
                let export = try registry.exportMetrics(
                    prefix: "p", every: .seconds(60), factory: metrics, timers: true,
                    loopLagInterval: .milliseconds(10))
                usleep(100_000)
                return UncheckedBox(export)
            }
            while (try? metrics.expectTimer("p_loop_lag"))?.values.isEmpty != false { await Task.yield() }
            let first = try #require(try metrics.expectTimer("p_loop_lag").values.first)
            #expect(first >= 90_000_000, "lag \(first) ns")
            try await loop.submit { export.value.stop() }
            await registry.shutdown()
            await loop.shutdown()
        }

        @Test func aConfiguredExportWithTimersRecordsFromTheStartAndRefusesANonPositiveLagInterval() throws {
            let metrics = TestMetrics()
            let loop = TestLoop()
            var configuration = RegistryConfiguration()
            configuration.metrics = .init(prefix: "c", factory: metrics, timers: true, loopLagInterval: .zero)
            #expect(throws: RegistryError.invalidDuration(name: "loopLagInterval", .zero)) {
                _ = try TaskRegistry<String>(loop: loop, configuration: configuration)
            }
            configuration.metrics?.loopLagInterval = .milliseconds(50)
            let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
            try registry.task("k", id: 1) { _ in }
            loop.advance(by: .milliseconds(50))
            #expect(try metrics.expectTimer("c_time_to_start", [("task", "main")]).values == [0])
            #expect(try metrics.expectTimer("c_run_duration", [("task", "main"), ("phase", "finished")]).values == [0])
            #expect(try metrics.expectTimer("c_loop_lag").values == [0])
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func exportingIsRefusedOffTheLoopAndForANonPositiveInterval() async throws {
            // A real loop, so that this task's thread is certainly not the loop's.
            let loop = UVLoop(name: "metrics")
            try loop.start()
            let registry = TaskRegistry<String>(loop: loop)
            #expect(throws: RegistryError.calledOffLoopThread) {
                _ = try registry.exportMetrics(factory: TestMetrics())
            }
            let refusedZero = try await loop.submit {
                do {
                    _ = try registry.exportMetrics(every: .zero, factory: TestMetrics())
                    return false
                } catch { return (error as? RegistryError) == .invalidDuration(name: "interval", .zero) }
            }
            #expect(refusedZero)
            await registry.shutdown()
            await loop.shutdown()
        }
    }
#endif
