import Dispatch
import Foundation
import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

/// A one-way door between threads: `wait()` blocks until `open()`. Any thread.
private final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func open() { semaphore.signal() }
    /// Blocks the calling thread: for the loop thread and plain threads, never a task.
    func wait() { semaphore.wait() }
    /// Waits on a thread of its own, so that a test step waiting for the loop never blocks a
    /// thread of the cooperative pool (two on this machine, shared by the tests running in
    /// parallel), which the loop's shutdown may need. Any task.
    func passed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                self.wait()
                continuation.resume()
            }.start()
        }
    }
}

/// Shuts `loop` down from a plain thread (as a program's main thread would), not from a task:
/// the test may hold the loop's hooks, and a held shutdown must not occupy the task pool.
/// `done` opens once it has returned.
private func shutDownOnAThread(_ loop: UVLoop) -> Gate {
    let done = Gate()
    Thread {
        try! loop.syncShutdown()
        done.open()
    }.start()
    return done
}

/// A value shared between threads behind a pthread mutex (`NSLock`: ThreadSanitizer reports
/// false races inside `Synchronization.Mutex`). Any thread.
private final class Shared<Value>: @unchecked Sendable {  // unchecked: `value` is only reached under `lock`
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// A `UVLoop` with two places to stop a caller of `execute`: just before the call reaches the
/// loop, and just after the loop refused it. The races of a shutdown are between those points
/// and the loop's shutdown hooks.
///
/// Unchecked `Sendable`: the two callbacks are set before any other thread uses the loop, and
/// each runs at most once (`Atomic` flags).
private final class InterposedLoop: TaskLoop, @unchecked Sendable {
    let inner: UVLoop
    var beforeExecute: (@Sendable () -> Void)?
    var afterRefusedExecute: (@Sendable () -> Void)?
    private let beforeDone = Atomic(false)
    private let afterDone = Atomic(false)

    init(_ inner: UVLoop) { self.inner = inner }

    var executor: any SerialExecutor { inner.executor }
    var now: LoopInstant { inner.now }
    var inLoop: Bool { inner.inLoop }
    var hasStarted: Bool { inner.hasStarted }

    func execute(_ work: @escaping @Sendable () -> Void) throws(LoopError) {
        if !inLoop, let beforeExecute, !beforeDone.exchange(true, ordering: .acquiringAndReleasing) {
            beforeExecute()
        }
        do { try inner.execute(work) } catch {
            if let afterRefusedExecute, !afterDone.exchange(true, ordering: .acquiringAndReleasing) {
                afterRefusedExecute()
            }
            throw error
        }
    }

    func makeTimer(_ onFire: @escaping () -> Void) throws(LoopError) -> any LoopTimer { try inner.makeTimer(onFire) }
    var services: LoopServices { inner.services }
    func enqueue(_ job: consuming ExecutorJob) { inner.enqueue(job) }
    func asUnownedTaskExecutor() -> UnownedTaskExecutor { UnownedTaskExecutor(ordinary: self) }
}

/// Every update of a phase stream, once it has ended.
private func allUpdates(_ stream: AsyncStream<TaskPhaseUpdate>) async -> [String] {
    var updates: [String] = []
    for await update in stream { updates.append(update.description) }
    return updates
}

/// A loop whose shutdown can be held between its request and its hooks: `hold` is registered
/// as the loop's first hook, so it runs before any registry's.
private struct HeldShutdown {
    let entered = Gate()
    let release = Gate()

    init(_ loop: UVLoop) {
        loop.onShutdown { [entered, release] in
            entered.open()
            release.wait()
        }
    }
}

/// The races of a loop's shutdown with calls from other threads, each held at its racy point
/// so that it happens every time; then a stress of all of them at once.
@Suite("Shutdown without races", .timeLimit(.minutes(2)))
struct ShutdownRaceTests {
    @Test("a declaration posted as the shutdown begins is applied by the hook, and its caller told success")
    func declarationRefusedByTheLoopIsAppliedByTheHook() async throws {
        let uv = UVLoop(name: "race-applied")
        try uv.start()
        let held = HeldShutdown(uv)
        let loop = InterposedLoop(uv)
        let registry = TaskRegistry<String>(loop: loop)
        let registryHookRan = Gate()
        uv.onShutdown { registryHookRan.open() }  // after the registry's own hook
        let updates = registry.phaseUpdates(of: "a")
        await registry.flush()
        // The loop refuses the declaration's wake-up; before its caller acts on that, the hooks
        // run, and the registry's applies what is queued.
        loop.afterRefusedExecute = {
            held.release.open()
            registryHookRan.wait()
        }
        let shutdown = shutDownOnAThread(uv)
        await held.entered.passed()
        #expect(throws: Never.self) { try registry.task("a", id: 1) { _ in } }
        await shutdown.passed()
        let phases = await allUpdates(updates)
        #expect(phases.last == "g1 cancelled(registryShutDown)", "applied, then cancelled by the shutdown: \(phases)")
        #expect(uv.loopCloseResult == 0 && uv.liveHandleCount == 0)
    }

    @Test("a declaration that joins a batch whose wake-up the loop refuses is applied, never dropped")
    func declarationJoiningARefusedBatchIsNotDropped() async throws {
        let uv = UVLoop(name: "race-joined")
        try uv.start()
        let held = HeldShutdown(uv)
        let loop = InterposedLoop(uv)
        let registry = TaskRegistry<String>(loop: loop)
        let first = registry.phaseUpdates(of: "first")
        let joined = registry.phaseUpdates(of: "joined")
        await registry.flush()
        // "first" opens a batch; before its wake-up reaches the loop, "joined" joins the batch
        // (no wake-up of its own) and is told success.
        let joinedResult = Shared<Result<Void, RegistryError>?>(nil)
        loop.beforeExecute = {
            let result = Result { () throws(RegistryError) in try registry.task("joined", id: 1) { _ in } }
            joinedResult.withLock { $0 = result }
        }
        let shutdown = shutDownOnAThread(uv)
        await held.entered.passed()
        #expect(throws: Never.self) { try registry.task("first", id: 1) { _ in } }
        #expect(joinedResult.withLock { $0.map { (try? $0.get()) != nil } } == true)
        held.release.open()
        await shutdown.passed()
        loop.beforeExecute = nil  // it holds the registry, which holds the loop
        for (name, stream) in [("first", first), ("joined", joined)] {
            let phases = await allUpdates(stream)
            #expect(phases.last == "g1 cancelled(registryShutDown)", "\(name): \(phases)")
        }
    }

    @Test("startShutdown before the loop starts refuses declarations at once and shuts down when it starts")
    func startShutdownBeforeStart() async throws {
        let loop = UVLoop(name: "not-yet-started")
        let registry = TaskRegistry<String>(loop: loop)
        let awaited = TaskRegistry<String>(loop: loop)
        registry.startShutdown()
        await awaited.shutdown()  // returns at once: nothing has run
        #expect(throws: RegistryError.shutDown) { try registry.task("a", id: 1) { _ in } }
        #expect(throws: RegistryError.shutDown) { try awaited.task("a", id: 1) { _ in } }
        try loop.start()
        #expect(throws: RegistryError.shutDown) { try registry.task("a", id: 1) { _ in } }
        // The shutdowns queued before the start ran on the loop thread, first.
        #expect(try await loop.submit { (try registry.isShutDown, try awaited.isShutDown) } == (true, true))
        try loop.syncShutdown()
        #expect(loop.loopCloseResult == 0)
    }

    @Test("a loop shut down without ever starting runs the jobs queued for it")
    func jobsQueuedBeforeStartRunWhenTheLoopNeverStarts() async throws {
        let loop = UVLoop(name: "never-started")
        let answer = Task(executorPreference: loop) { 42 }
        let registry = TaskRegistry<String>(loop: loop)
        registry.startShutdown()  // queues the registry's shutdown as a job
        try loop.syncShutdown()
        #expect(await answer.value == 42)
        #expect(throws: RegistryError.shutDown) { try registry.task("a", id: 1) { _ in } }
    }

    @Test("a registry released between the shutdown's request and its hooks still ends every task")
    func registryReleasedInTheShutdownWindow() async throws {
        let uv = UVLoop(name: "race-released")
        try uv.start()
        let held = HeldShutdown(uv)
        var registry: TaskRegistry<String>? = TaskRegistry<String>(loop: uv)
        let started = Gate()
        try registry!.task("running", id: 1) { context in
            started.open()
            try? await context.clock.sleep(for: .seconds(3600))
        }
        try registry!.task("debounced", id: 1, debounce: .seconds(3600)) { _ in }
        let debounced = registry!.phaseUpdates(of: "debounced")
        await registry!.flush()
        await started.passed()
        let shutdown = shutDownOnAThread(uv)
        await held.entered.passed()
        registry = nil  // the loop refuses closures now, and its hooks have not run
        held.release.open()
        await shutdown.passed()
        let phases = await allUpdates(debounced)
        #expect(phases.last?.hasSuffix("cancelled(registryShutDown)") == true, "\(phases)")
        #expect(uv.loopCloseResult == 0 && uv.liveHandleCount == 0)
    }

    @Test("4 threads declare, cancel, snapshot as the loop shuts down: every accepted declaration applied")
    func stressOfCallsDuringShutdown() async throws {
        for iteration in 0..<1_000 {
            let loop = UVLoop(name: "stress-\(iteration)")
            try loop.start()
            let registry = TaskRegistry<Int>(loop: loop)
            let appliedAtShutdown = Atomic<UInt64>(0)
            loop.onShutdown {  // after the registry's hook, which applied everything accepted
                appliedAtShutdown.store((try? registry.counters.declared) ?? .max, ordering: .releasing)
            }
            let accepted = Atomic<UInt64>(0)
            let unexpectedRefusals = Shared<[String]>([])
            let snapshots = Shared<[Task<Void, Never>]>([])
            let shutdownStep = iteration % 40
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for step in 0..<40 {
                    if thread == 0 && step == shutdownStep { try! loop.syncShutdown() }
                    let key = thread * 8 + step % 8
                    switch step % 4 {
                    case 0, 1:
                        do {
                            try registry.task(key, id: step) { context in
                                try? await context.clock.sleep(for: .microseconds(50))
                                _ = context.commit(result: step)
                            }
                            accepted.add(1, ordering: .relaxed)
                        } catch {
                            // Recorded here, checked below: an expectation on a dispatch thread
                            // has no test to report to.
                            let refusal = error as? RegistryError
                            if refusal != .shutDown && refusal != .overloaded {
                                unexpectedRefusals.withLock { $0.append("\(error)") }
                            }
                        }
                    case 2:
                        try? registry.cancel(key)
                    default:
                        let snapshot = Task { _ = try? await registry.snapshot(of: key) }
                        snapshots.withLock { $0.append(snapshot) }
                    }
                }
            }
            for snapshot in snapshots.withLock({ $0 }) { await snapshot.value }
            await registry.shutdown()
            #expect(appliedAtShutdown.load(ordering: .acquiring) == accepted.load(ordering: .relaxed))
            #expect(unexpectedRefusals.withLock { $0 }.isEmpty)
            #expect(loop.loopCloseResult == 0 && loop.liveHandleCount == 0)
        }
    }
}
