#if Metrics
    import MetricsTestKit
    import Testing
    import TaskIdentity
    import UVLoop

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
