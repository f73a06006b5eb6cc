// The registry's and the loop's micro-operations, measured by package-benchmark with malloc
// counts. The registry runs on a TestLoop here: everything happens on the benchmark's thread,
// so the malloc counts are exact and repeatable. The loop's own operations run on a UVLoop.

import Benchmark
import TaskIdentity
import UVLoop

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 1,
        scalingFactor: .kilo,
        maxDuration: .seconds(1),
        maxIterations: 20,
        // Malloc counts are exact for the registry (on a TestLoop, one thread) and for timer
        // re-arms; the committed thresholds (Thresholds/, per 1,000 operations) cover those.
        // The slack absorbs array regrowth landing on different iterations from run to run.
        // Cross-thread and sleep counts depend on thread timing and have no threshold.
        thresholds: [.mallocCountTotal: .init(absolute: [.p90: 16])]
    )

    // A new slot's first declaration, debounced so that no Swift task starts: the record,
    // the slot table's share and the deadline entry.
    Benchmark("registry.declare.new-slot") { benchmark in
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        benchmark.startMeasurement()
        for key in benchmark.scaledIterations {
            try? registry.task(key, id: 1, debounce: .seconds(3600)) { _ in }
        }
        benchmark.stopMeasurement()
        registry.startShutdown()
        loop.run()
    }

    // A new identity of one slot with no debounce: cancel nothing (the last run finished),
    // start one Swift task, run it to its end.
    Benchmark("registry.restart") { benchmark in
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        benchmark.startMeasurement()
        for id in benchmark.scaledIterations {
            try? registry.task(0, id: id) { _ in }
            loop.run()
        }
        benchmark.stopMeasurement()
        registry.startShutdown()
        loop.run()
    }

    // The same through a template (what a server declares per request): the Swift task and its
    // first frame slab (the runtime's two allocations for any task that awaits), and the task
    // closure's capture box and thunk context.
    Benchmark("registry.restart.template") { benchmark in
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        let template = try TaskTemplate<Int> { _, context in context.commit {} }
        benchmark.startMeasurement()
        for id in benchmark.scaledIterations {
            try? registry.task(0, id: id, template: template)
            loop.run()
        }
        benchmark.stopMeasurement()
        registry.startShutdown()
        loop.run()
    }

    // The same through a synchronous template: the action is called on the loop, inline, and
    // the run ends; no Swift task.
    Benchmark("registry.restart.synchronous") { benchmark in
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        let template = try TaskTemplate<Int>.synchronous { _, _ in }
        benchmark.startMeasurement()
        for id in benchmark.scaledIterations {
            try? registry.task(0, id: id, template: template)
            loop.run()
        }
        benchmark.stopMeasurement()
        registry.startShutdown()
        loop.run()
    }

    // A new identity inside the debounce window: re-arms the window, creates no task.
    Benchmark("registry.restart.coalesced") { benchmark in
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        benchmark.startMeasurement()
        for id in benchmark.scaledIterations {
            try? registry.task(0, id: id, debounce: .milliseconds(50)) { _ in }
        }
        benchmark.stopMeasurement()
        registry.startShutdown()
        loop.run()
    }

    // Declaring a slot and removing it (the view appears and disappears at once).
    Benchmark("registry.remove") { benchmark in
        let loop = TestLoop()
        let registry = TaskRegistry<Int>(loop: loop)
        benchmark.startMeasurement()
        for key in benchmark.scaledIterations {
            try? registry.task(key, id: 1, debounce: .seconds(3600)) { _ in }
            try? registry.remove(key)
        }
        benchmark.stopMeasurement()
        registry.startShutdown()
        loop.run()
    }

    // One job enqueued on the loop from the loop thread and run: a task yielding.
    Benchmark("loop.enqueue.on-loop") { benchmark in
        let loop = UVLoop(name: "micro")
        try loop.start()
        let iterations = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        await Task(executorPreference: loop) {
            for _ in 0..<iterations { await Task.yield() }
        }.value
        benchmark.stopMeasurement()
        try loop.syncShutdown()
    }

    // A closure enqueued on the loop from another thread (a non-capturing one: the queue
    // itself allocates nothing per call once grown).
    Benchmark("loop.enqueue.cross-thread") { benchmark in
        let loop = UVLoop(name: "micro")
        try loop.start()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            try loop.execute {}
        }
        _ = try await loop.submit { 0 }
        benchmark.stopMeasurement()
        try loop.syncShutdown()
    }

    // Re-arming a libuv timer on the loop thread: no allocation per re-arm.
    Benchmark("loop.timer.rearm") { benchmark in
        let loop = UVLoop(name: "micro")
        try loop.start()
        let iterations = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        try await loop.submit {
            let timer = try loop.makeUVTimer {}
            for _ in 0..<iterations { try timer.start(after: .milliseconds(50)) }
            timer.close()
        }
        benchmark.stopMeasurement()
        try loop.syncShutdown()
    }

    // A zero-length sleep on the loop's clock (a libuv timer handle per sleep).
    Benchmark("loop.clock.sleep") { benchmark in
        let loop = UVLoop(name: "micro")
        try loop.start()
        let iterations = benchmark.scaledIterations.count
        benchmark.startMeasurement()
        try await Task(executorPreference: loop) {
            for _ in 0..<iterations { try await loop.clock.sleep(for: .zero) }
        }.value
        benchmark.stopMeasurement()
        try loop.syncShutdown()
    }
}
