#if Logging
    import CLibUV
    import Logging
    import Observation
    import Synchronization
    import Testing
    import TaskIdentity

    @testable import UVLoop

    /// A log handler that keeps every record, for asserting what the registry logged.
    ///
    /// `Sendable`: its records are behind a `Mutex`.
    final class CapturedLogs: Sendable {
        private let records = Mutex<[(Logger.Level, String)]>([])

        /// A logger at `trace` that writes here. May be called from any thread.
        func logger() -> Logger {
            Logger(label: "test") { _ in CapturingHandler(sink: self) }
        }

        /// Every record so far. May be called from any thread.
        var all: [(level: Logger.Level, message: String)] { records.withLock { $0.map { ($0.0, $0.1) } } }

        fileprivate func append(_ level: Logger.Level, _ message: String) {
            records.withLock { $0.append((level, message)) }
        }
    }

    private struct CapturingHandler: LogHandler {
        let sink: CapturedLogs
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) { sink.append(event.level, "\(event.message)") }
    }

    @Suite("Logging trait: what the registry would otherwise swallow")
    struct LoggingTests {
        @Test func aFailedRunIsLoggedAtTraceWithItsError() throws {
            struct Boom: Error {}
            let logs = CapturedLogs()
            let loop = TestLoop()
            let registry = try TaskRegistry<String>(loop: loop, configuration: .logging(to: logs.logger()))
            #expect(registry.configuration.logger?.label == "test")
            try registry.task("a", id: 1) { _ in throw Boom() }
            loop.run()
            let failed = logs.all.filter { $0.message.contains("failed") }
            #expect(failed.count == 1)
            #expect(failed.first?.level == .trace)
            #expect(failed.first?.message.contains("Boom") == true)
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func callsThatCannotReachAShutDownLoopAreLoggedAtDebug() async throws {
            let logs = CapturedLogs()
            let loop = UVLoop(name: "logging")
            try loop.start()
            let registry = try TaskRegistry<String>(loop: loop, configuration: .logging(to: logs.logger()))
            try loop.syncShutdown()
            // From this (non-loop) thread: the stream cannot be registered and ends at once.
            var updates = 0
            for await _ in registry.phaseUpdates(of: "a") { updates += 1 }
            #expect(updates == 0)
            registry.startShutdown()
            let debug = logs.all.filter { $0.level == .debug }.map(\.message)
            #expect(debug.contains { $0.contains("phase stream") })
            #expect(debug.contains { $0.contains("startShutdown") })
            #expect(logs.all.allSatisfy { $0.level <= .debug }, "a library logs at debug and trace only")
        }

        @Test("one configuration sets a logger and an observation depth at once, and both take effect")
        func aLoggerAndAnObservationDepthTogether() throws {
            let logs = CapturedLogs()
            let loop = TestLoop()
            var configuration = RegistryConfiguration.logging(to: logs.logger())
            configuration.maxObservationDepth = 2
            let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
            #expect(registry.configuration.logger?.label == "test")
            #expect(registry.configuration.maxObservationDepth == 2)
            // A run that writes what its own identity reads restarts itself: the depth stops it.
            let counter = LoopBound(ObservedCounter(), loop: loop)
            try registry.task("a", tracking: { counter.value.value }) { value, context in
                context.commit { counter.value.value = value + 1 }
            }
            loop.run()
            #expect(try registry.counters.observationCyclesStopped == 1, "the configured depth stopped the chain")
            #expect(counter.value.value == 3, "depths 0...2 wrote, the next re-evaluation was stopped")
            struct Boom: Error {}
            try registry.task("b", id: 1) { _ in throw Boom() }
            loop.run()
            #expect(logs.all.contains { $0.message.contains("failed") }, "the configured logger heard the failure")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func withoutALoggerNothingIsLogged() throws {
            let loop = TestLoop()
            let registry = TaskRegistry<String>(loop: loop)
            #expect(registry.configuration.logger == nil)
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }
    }

    /// A log handler that keeps each line's message and its metadata, its metadata provider's
    /// included, as swift-log's own handlers merge them.
    private struct MetadataCapturingHandler: LogHandler {
        let lines: CapturedMetadata
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            all.merge(metadataProvider?.get() ?? [:]) { _, provided in provided }
            all.merge(event.metadata ?? [:]) { _, explicit in explicit }
            lines.append("\(event.message)", all)
        }
    }

    /// Lines with their metadata, from any thread.
    final class CapturedMetadata: Sendable {
        private let lines = Mutex<[(message: String, metadata: Logger.Metadata)]>([])
        func append(_ message: String, _ metadata: Logger.Metadata) {
            lines.withLock { $0.append((message, metadata)) }
        }
        func metadata(of message: String) -> [String: String]? {
            lines.withLock { lines in
                lines.first { $0.message == message }.map { $0.metadata.mapValues { "\($0)" } }
            }
        }
    }

    @Suite("Logging trait: the run's key, task name and generation in every log line inside it")
    struct RunLogMetadataTests {
        @Test func aLineInsideARunAndItsChildTasksSaysWhichRun() async throws {
            let captured = CapturedMetadata()
            // As `LoggingSystem.bootstrap(_:metadataProvider: .taskIdentity)` would make it.
            let logger = Logger(label: "app") { _ in
                MetadataCapturingHandler(lines: captured, metadataProvider: .taskIdentity)
            }
            let loop = UVLoop(name: "run-metadata")
            try loop.start()
            let registry = TaskRegistry<String>(loop: loop)
            try registry.task("user:1", name: "search", id: 1) { _ in }
            try registry.task("user:1", name: "search", id: 2) { _ in
                logger.info("in the action")
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { logger.info("in a child task") }
                }
            }
            await registry.flush()
            while try await registry.snapshot(of: "user:1", name: "search")?.phase.isFinal != true {
                await Task.yield()
            }
            logger.info("outside")
            let expected = ["task.key": "user:1", "task.name": "search", "task.generation": "2"]
            #expect(captured.metadata(of: "in the action") == expected)
            #expect(captured.metadata(of: "in a child task") == expected)
            #expect(captured.metadata(of: "outside") == [:])
            await registry.shutdown()
            try loop.syncShutdown()
        }
    }

    @Suite("Logging trait: a UVLoop's life and what it would otherwise swallow")
    struct LoopLoggingTests {
        @Test func startAndShutdownAreLoggedAtDebug() async throws {
            let logs = CapturedLogs()
            let loop = UVLoop(name: "logged", logger: logs.logger())
            #expect(loop.logger?.label == "test")
            try loop.start()
            // One handle for the shutdown to close: a timer kept open until then.
            let timer = try await loop.submit { UncheckedBox(try loop.makeTimer {}) }
            await loop.shutdown()
            withExtendedLifetime(timer) {}
            #expect(loop.loopCloseResult == 0)
            #expect(
                logs.all.map(\.message) == [
                    "UVLoop(logged) started", "UVLoop(logged) shutting down: 1 handles to close",
                    "UVLoop(logged) shut down",
                ])
            #expect(logs.all.allSatisfy { $0.level == .debug })
        }

        @Test func handlesLeftOpenAtCloseAreAWarningThatNamesThem() async throws {
            let logs = CapturedLogs()
            let loop = UVLoop(name: "leaky", logger: logs.logger())
            try loop.start()
            // A raw libuv timer that no UVLoop owner knows of: shutdown cannot close it, so
            // uv_loop_close finds it open (what a defect in a handle's owner would leave).
            let stray = UnsafeMutablePointer<uv_timer_t>.allocate(capacity: 1)
            defer { stray.deallocate() }  // the loop thread has exited: libuv no longer sees it
            let strayAddress = Int(bitPattern: stray)
            try await loop.submit {
                let stray = UnsafeMutablePointer<uv_timer_t>(bitPattern: strayAddress)!
                _ = uv_timer_init(loop.uvLoop, stray)
                stray.pointee.data = nil
            }
            await loop.shutdown()
            #expect(loop.loopCloseResult == UV_EBUSY.rawValue)
            let warnings = logs.all.filter { $0.level == .warning }.map(\.message)
            #expect(warnings == ["UVLoop(leaky) shut down with handles still open (uv_loop_close: EBUSY): timer"])
        }

        @Test func aLoopWithoutALoggerHasNone() throws {
            let loop = UVLoop(name: "quiet")
            #expect(loop.logger == nil)
        }
    }

    extension RegistryConfiguration {
        /// Defaults, with `logger`.
        static func logging(to logger: Logger) -> RegistryConfiguration {
            var configuration = RegistryConfiguration()
            configuration.logger = logger
            return configuration
        }
    }

    /// A model whose one property an observed identity reads and its own run writes.
    @Observable final class ObservedCounter {
        var value = 0
    }
#endif
