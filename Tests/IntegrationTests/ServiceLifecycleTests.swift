#if ServiceLifecycle
    import Logging
    import ServiceLifecycle
    import ServiceLifecycleTestKit
    import Testing
    import TaskIdentity
    import UVLoop

    @Suite("ServiceLifecycle trait: loops and registries as Services")
    struct ServiceLifecycleTests {
        @Test func gracefulShutdownStopsTheRegistryThenItsLoops() async throws {
            let group = try UVLoopGroup(loops: 2)
            let registry = ShardedTaskRegistry<Int>(group: group)
            let single = TaskRegistry<Int>(loop: group.loops[0])
            for key in 0..<8 {
                try registry.task(key, id: 1) { _ in try await Task.sleep(for: .seconds(3600)) }
            }
            try single.task(0, id: 1) { _ in try await Task.sleep(for: .seconds(3600)) }
            await registry.flush()
            await single.flush()
            #expect(try await registry.countersSnapshot().runningActions == 8)

            try await testGracefulShutdown { trigger in
                let services = ServiceGroup(
                    configuration: .init(
                        services: [
                            // Stopped in reverse order: the registries before their loops.
                            .init(service: group), .init(service: registry), .init(service: single),
                        ],
                        logger: Logger(label: "test")))
                async let running: Void = services.run()
                trigger.triggerGracefulShutdown()
                try await running
            }
            // Every action ended cancelled, and every loop closed cleanly.
            for loop in group.loops {
                #expect(loop.isShutDown)
                #expect(loop.loopCloseResult == 0)
            }
            #expect(throws: RegistryError.shutDown) { try registry.task(1, id: 2) { _ in } }
            #expect(throws: RegistryError.shutDown) { try single.task(1, id: 2) { _ in } }
        }
    }
#endif
