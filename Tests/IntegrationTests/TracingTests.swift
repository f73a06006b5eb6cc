#if Tracing
    import InMemoryTracing
    import TaskIdentity
    import TaskLoopCore
    import Testing
    import Tracing
    import UVLoop

    /// Trait `Tracing`: a span per run, under the trace context of its declaration.
    @Suite("Tracing trait: a span per run")
    struct TracingTests {
        /// A registry on `loop` whose runs' spans go to `tracer`.
        static func registry(on loop: any TaskLoop, tracer: InMemoryTracer, namesRuns: Bool = false) throws
            -> TaskRegistry<String>
        {
            var configuration = RegistryConfiguration()
            configuration.tracer = tracer
            configuration.namesRuns = namesRuns
            return try TaskRegistry<String>(loop: loop, configuration: configuration)
        }

        /// Named runs too (`namesRuns`): their tasks are made apart, and inherit the same context.
        @Test(arguments: [false, true])
        func aRunPostedFromARequestIsItsChildAndTheActionSeesTheRunsContext(namesRuns: Bool) async throws {
            let tracer = InMemoryTracer()
            let loop = UVLoop(name: "traced")
            try loop.start()
            let registry = try Self.registry(on: loop, tracer: tracer, namesRuns: namesRuns)
            // Declared from a task off the loop, inside a request's span: the declaration is posted.
            let request = try await tracer.withSpan("GET /search") { span in
                try registry.task("user:1", name: "search", id: "swift") { _ in
                    // A child task of the action makes a span of its own (as an HTTP client would).
                    await withTaskGroup(of: Void.self) { group in
                        group.addTask { tracer.withSpan("backend call") { _ in } }
                    }
                }
                return span.context.inMemorySpanContext!
            }
            await registry.flush()
            while try await registry.snapshot(of: "user:1", name: "search")?.phase.isFinal != true {
                await Task.yield()
            }
            await registry.shutdown()
            try loop.syncShutdown()

            let spans = tracer.finishedSpans
            let run = try #require(spans.first { $0.operationName == "String/search" })
            #expect(run.spanContext.traceID == request.traceID)
            #expect(run.parentSpanID == request.spanID, "the run is the request's child")
            #expect(run.attributes["task.key"]?.toSpanAttribute() == "user:1")
            #expect(run.attributes["task.identity"]?.toSpanAttribute() == "swift")
            #expect(run.attributes["task.generation"]?.toSpanAttribute() == .int64(1))
            #expect(run.attributes["task.phase"]?.toSpanAttribute() == "finished")
            #expect(run.status == SpanStatus(code: .ok))
            let call = try #require(spans.first { $0.operationName == "backend call" })
            #expect(call.parentSpanID == run.spanID, "the action's child task made its span under the run's")
        }

        @Test func aDeclarationOnAShardKeepsTheCallersContext() async throws {
            let tracer = InMemoryTracer()
            let loop = UVLoop(name: "shard")
            try loop.start()
            var configuration = RegistryConfiguration()
            configuration.tracer = tracer
            let registry = try ShardedTaskRegistry<String>(loops: [loop], configuration: configuration)
            let request = try await tracer.withSpan("GET /search") { span in
                try await registry.onShard(for: "user:1") { shard in try shard.task("user:1", id: 1) { _ in } }
                return span.context.inMemorySpanContext!
            }
            while try await registry.snapshot(of: "user:1")?.phase.isFinal != true { await Task.yield() }
            await registry.shutdown()
            try loop.syncShutdown()
            let run = try #require(tracer.finishedSpans.first { $0.operationName == "String/main" })
            #expect(run.parentSpanID == request.spanID)
        }

        @Test func aRunAfterADebounceLinksTheDeclarationsItMerged() throws {
            let tracer = InMemoryTracer()
            let loop = TestLoop()
            let registry = try Self.registry(on: loop, tracer: tracer)
            var keystrokes: [InMemorySpanContext] = []
            for query in ["s", "sw", "swi"] {
                try tracer.withSpan("keystroke \(query)") { span in
                    try registry.task("user:1", id: query, debounce: .milliseconds(100)) { _ in }
                    keystrokes.append(span.context.inMemorySpanContext!)
                }
                loop.advance(by: .milliseconds(30))
            }
            loop.advance(by: .milliseconds(100))
            loop.run()

            let runs = tracer.finishedSpans.filter { $0.operationName == "String/main" }
            #expect(runs.count == 1, "one run for the burst")
            let run = try #require(runs.first)
            #expect(run.parentSpanID == keystrokes[2].spanID, "the last declaration is the parent")
            #expect(run.links.map { $0.context.inMemorySpanContext?.spanID } == keystrokes[0..<2].map(\.spanID))
            #expect(run.attributes["task.merged_declarations"]?.toSpanAttribute() == .int64(2))
            #expect(run.attributes["task.identity"]?.toSpanAttribute() == "swi")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aRestartIsACancellationEventNotAnError() throws {
            let tracer = InMemoryTracer()
            let loop = TestLoop()
            let registry = try Self.registry(on: loop, tracer: tracer)
            try registry.task("k", id: 1) { _ in try await loop.clock.sleep(for: .seconds(60)) }
            loop.run()
            #expect(tracer.activeSpans.count == 1, "the first run's span is open while it runs")
            try registry.task("k", id: 2) { _ in }
            loop.run()

            let spans = tracer.finishedSpans
            let first = try #require(spans.first { $0.attributes["task.generation"]?.toSpanAttribute() == .int64(1) })
            #expect(first.events.map(\.name) == ["cancelled"])
            #expect(first.events.first?.attributes["task.cancellation_reason"]?.toSpanAttribute() == "identityChanged")
            #expect(first.status?.code != .error, "a cancellation is not an error")
            #expect(first.attributes["task.phase"]?.toSpanAttribute() == "cancelled(identityChanged)")
            #expect(first.errors.isEmpty)
            let second = try #require(spans.first { $0.attributes["task.generation"]?.toSpanAttribute() == .int64(2) })
            #expect(second.status == SpanStatus(code: .ok))
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aCancelledRunStaysCancelledWhateverItsActionThrowsAfter() throws {
            struct ClientCancelled: Error {}
            let tracer = InMemoryTracer()
            let loop = TestLoop()
            let registry = try Self.registry(on: loop, tracer: tracer)
            // As an HTTP client does: its own error for a cancelled request.
            try registry.task("k", id: 1) { _ in
                do { try await loop.clock.sleep(for: .seconds(60)) } catch { throw ClientCancelled() }
            }
            loop.run()
            try registry.task("k", id: 2) { _ in }
            loop.run()
            let first = try #require(
                tracer.finishedSpans.first { $0.attributes["task.generation"]?.toSpanAttribute() == .int64(1) })
            #expect(first.status == nil, "neither ok nor error: cancelled")
            #expect(first.errors.isEmpty)
            #expect(first.attributes["task.phase"]?.toSpanAttribute() == "cancelled(identityChanged)")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aDelayedSynchronousRunIsCalledInItsSpansContext() throws {
            let tracer = InMemoryTracer()
            let loop = TestLoop()
            let registry = try Self.registry(on: loop, tracer: tracer)
            let template = try TaskTemplate<String>.synchronous(after: .milliseconds(5)) { _, context in
                _ = context.commit(result: ServiceContext.current?.inMemorySpanContext?.spanID ?? "none")
            }
            try tracer.withSpan("request") { _ in try registry.task("k", id: 1, template: template) }
            loop.advance(by: .milliseconds(5))
            let run = try #require(tracer.finishedSpans.first { $0.operationName == "String/main" })
            #expect(try registry.result(of: "k", as: String.self) == run.spanID)
            #expect(run.parentSpanID == tracer.finishedSpans.first { $0.operationName == "request" }?.spanID)
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aFailureIsAnErrorAndEachAttemptASpan() throws {
            struct Boom: Error {}
            let tracer = InMemoryTracer()
            let loop = TestLoop()
            let registry = try Self.registry(on: loop, tracer: tracer)
            try registry.task(
                "k", id: 1, retry: RetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(10), jitter: 0)
            ) { _ in throw Boom() }
            loop.run()
            loop.advance(by: .milliseconds(10))
            loop.run()

            let attempts = tracer.finishedSpans.filter { $0.operationName == "String/main" }
            #expect(attempts.compactMap { $0.attributes["task.attempt"]?.toSpanAttribute() } == [.int64(1), .int64(2)])
            for attempt in attempts {
                #expect(attempt.status?.code == .error)
                #expect(attempt.errors.count == 1)
                #expect(attempt.errors.first?.error is Boom)
            }
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }

        @Test func aStaleCommitAndAShutdownAreEventsOfTheSpanTheyEnded() async throws {
            let tracer = InMemoryTracer()
            let loop = TestLoop()
            let registry = try Self.registry(on: loop, tracer: tracer)
            // The first run ignores its cancellation and tries to commit after it.
            try registry.task("k", id: 1) { context in
                try? await loop.clock.sleep(for: .seconds(1))
                _ = context.commit(result: "late")
            }
            loop.run()
            try registry.task("k", id: 2) { _ in try await loop.clock.sleep(for: .seconds(60)) }
            loop.run()
            registry.startShutdown()
            loop.run()
            loop.shutdown()

            let spans = tracer.finishedSpans
            let first = try #require(spans.first { $0.attributes["task.generation"]?.toSpanAttribute() == .int64(1) })
            #expect(first.events.map(\.name) == ["cancelled", "stale commit dropped"])
            let second = try #require(spans.first { $0.attributes["task.generation"]?.toSpanAttribute() == .int64(2) })
            #expect(
                second.events.first?.attributes["task.cancellation_reason"]?.toSpanAttribute() == "registryShutDown")
            #expect(tracer.activeSpans.isEmpty, "shutdown leaves no span open")
        }

        @Test func theNoOpTracerMakesNoSpansAndTheRegistryStillWorks() throws {
            let loop = TestLoop()
            var configuration = RegistryConfiguration()
            configuration.tracer = NoOpTracer()
            let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
            try registry.task("k", id: 1) { context in _ = context.commit(result: ServiceContext.current == nil) }
            loop.run()
            #expect(try registry.phase(of: "k")?.description == "finished")
            #expect(try registry.result(of: "k", as: Bool.self) == true, "no span, so no context bound")
            registry.startShutdown()
            loop.run()
            loop.shutdown()
        }
    }
#endif
