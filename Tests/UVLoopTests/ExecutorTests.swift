import Dispatch
import Testing

@testable import UVLoop

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("UVLoop as an executor")
struct ExecutorTests {
    @Test func pinnedActorRunsOnLoopThread() async throws {
        try await withStartedLoop { loop in
            let counter = PinnedCounter(loop: loop)
            for _ in 0..<100 {
                #expect(await counter.incrementReportingThread())
            }
            #expect(await counter.count == 100)
            #expect(!loop.inLoop, "the test itself runs off the loop")
        }
    }

    @Test func taskWithExecutorPreferenceResumesOnLoopAfterEachAwait() async throws {
        try await withStartedLoop { loop in
            let observations = try await Task(executorPreference: loop) { () -> [Bool] in
                var onLoop = [loop.inLoop]
                await Task.yield()
                onLoop.append(loop.inLoop)
                try await loop.clock.sleep(for: .milliseconds(1))
                onLoop.append(loop.inLoop)
                _ = await Task.detached { 1 }.value  // a hop to the global executor and back
                onLoop.append(loop.inLoop)
                let counter = PinnedCounter(loop: loop)
                _ = await counter.incrementReportingThread()
                onLoop.append(loop.inLoop)
                return onLoop
            }.value
            #expect(observations == [true, true, true, true, true])
        }
    }

    @Test func hundredThousandJobsFromFourThreadsRunExactlyOnce() async throws {
        try await withStartedLoop { loop in
            // Under a sanitizer (scripts/test sets TASKIDENTITY_SANITIZED) a fifth of the jobs:
            // the full count took 50 s there, the longest test of each sanitized step.
            let perThread = getenv("TASKIDENTITY_SANITIZED") == nil ? 25_000 : 5_000
            let runs = LoopConfined([UInt8](repeating: 0, count: 4 * perThread))
            let wrongThread = LoopConfined(0)
            // Closures through execute().
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<perThread {
                    try! loop.execute {
                        if !loop.inLoop { wrongThread.value += 1 }
                        runs.value[thread * perThread + index] &+= 1
                    }
                }
            }
            let closureRuns = try await loop.submit { runs.value }
            #expect(closureRuns.allSatisfy { $0 == 1 })
            #expect(try await loop.submit { wrongThread.value } == 0)

            // Executor jobs: tasks whose first job is enqueued from four threads.
            let jobRuns = LoopConfined([UInt8](repeating: 0, count: 4 * perThread))
            let collect = Locked<[Task<Void, Never>]>([])
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                var mine: [Task<Void, Never>] = []
                mine.reserveCapacity(perThread)
                for index in 0..<perThread {
                    mine.append(Task(executorPreference: loop) { jobRuns.value[thread * perThread + index] &+= 1 })
                }
                collect.withLock { $0.append(contentsOf: mine) }
            }
            for task in collect.withLock({ $0 }) { await task.value }
            let counted = try await loop.submit { jobRuns.value }
            #expect(counted.count == 4 * perThread)
            #expect(counted.allSatisfy { $0 == 1 })
        }
    }

    @Test func higherPrioritiesRunFirstWithinATurn() async throws {
        try await withStartedLoop { loop in
            let order = LoopConfined<[String]>([])
            let tasks = try await loop.submit { () -> [Task<Void, Never>] in
                // All three are enqueued on the loop thread while this closure runs, so they
                // wait in the same turn's queue.
                [
                    Task(executorPreference: loop, priority: .background) { order.value.append("background") },
                    Task(executorPreference: loop, priority: .low) { order.value.append("low") },
                    Task(executorPreference: loop, priority: .medium) { order.value.append("medium") },
                    Task(executorPreference: loop, priority: .high) { order.value.append("high") },
                ]
            }
            for task in tasks { await task.value }
            #expect(try await loop.submit { order.value } == ["high", "medium", "low", "background"])
        }
    }

    @Test func priorityBandsOfTheWorkQueue() {
        var queue = PriorityWorkQueue()
        let tags = LoopConfined<[Int]>([])
        for (tag, priority) in [(1, TaskPriority.low), (2, .high), (3, .medium), (4, .background), (5, .high)] {
            queue.append(.closure({ tags.value.append(tag) }), priority: priority.rawValue)
        }
        while let work = queue.popFirst() {
            if case .closure(let body) = work { body() }
        }
        #expect(tags.value == [2, 5, 3, 1, 4])
    }

    @Test func submitReturnsTheResultAndRethrows() async throws {
        struct Boom: Error {}
        try await withStartedLoop { loop in
            let onLoop = try await loop.submit { loop.inLoop }
            #expect(onLoop)
            await #expect(throws: Boom.self) { try await loop.submit { throw Boom() } }
        }
    }
}
