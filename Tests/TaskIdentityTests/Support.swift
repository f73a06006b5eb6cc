import Testing
import UVLoop

@testable import TaskIdentity

/// State touched only on the test loop's thread (the test's own steps and the loop's jobs).
final class Confined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// An ordered log of what actions and commits did, for asserting exact sequences.
final class EventLog: @unchecked Sendable {
    private(set) var events: [String] = []
    func add(_ event: String) { events.append(event) }
    func take() -> [String] {
        defer { events = [] }
        return events
    }
}

/// Records a task's phase updates as they arrive, on the test loop.
final class PhaseRecorder: @unchecked Sendable {
    private(set) var updates: [TaskPhaseUpdate] = []
    /// The stream has ended.
    private(set) var hasEnded = false
    private var consumer: Task<Void, Never>?

    init<Key>(_ registry: TaskRegistry<Key>, _ key: Key, name: TaskName = .main) {
        let stream = registry.phaseUpdates(of: key, name: name)
        consumer = Task(executorPreference: registry.loop) { [unowned self] in
            for await update in stream { self.updates.append(update) }
            self.hasEnded = true
        }
    }

    /// The phases as short strings, `g2 running`, skipping the initial snapshot.
    var phases: [String] { updates.dropFirst().map(\.description) }

    func take() -> [String] {
        defer { updates = Array(updates.prefix(1)) }
        return phases
    }
}

extension TestLoop {
    /// Advances in whole milliseconds (readability in scenarios).
    func advance(ms: Int) { advance(by: .milliseconds(ms)) }
}

/// A registry on a fresh test loop; `finish` shuts it down and checks nothing is left.
struct RegistryHarness<Key: Hashable & Sendable> {
    let loop = TestLoop()
    let registry: TaskRegistry<Key>
    let log = EventLog()

    init() { registry = TaskRegistry<Key>(loop: loop) }

    func finish(sourceLocation: SourceLocation = #_sourceLocation) {
        registry.startShutdown()
        loop.run()
        let counters = try! registry.counters
        #expect(counters.runningActions == 0, sourceLocation: sourceLocation)
        #expect(counters.liveSlots == 0, sourceLocation: sourceLocation)
        #expect(counters.liveGenerations == 0, sourceLocation: sourceLocation)
        #expect(try! registry.openTimerCount == 0, sourceLocation: sourceLocation)
        #expect(
            registry.core.startPass.endedCount == 0, "an ended task kept past shutdown", sourceLocation: sourceLocation)
        #expect(registry.core.runNotes.count == 0, "a run's note kept past its end", sourceLocation: sourceLocation)
        #expect(registry.identityStreams.isEmpty, "a sequence still followed", sourceLocation: sourceLocation)
        loop.shutdown()
        #expect(loop.openTimerCount == 0, sourceLocation: sourceLocation)
        #expect(loop.queuedWorkCount == 0, sourceLocation: sourceLocation)
    }
}

/// The `ObservationCycleError` that the task of slot `key` failed with; records an issue and
/// returns nil when its phase is anything else.
func cycleError<Key>(
    of key: Key, in registry: TaskRegistry<Key>, sourceLocation: SourceLocation = #_sourceLocation
) throws -> ObservationCycleError? {
    let phase = try registry.phase(of: key)
    guard case .failed(let error as ObservationCycleError)? = phase else {
        Issue.record(
            "\(key) should have failed with a cycle error: \(String(describing: phase))", sourceLocation: sourceLocation
        )
        return nil
    }
    return error
}

extension RegistryConfiguration {
    /// Defaults, but chains of observed runs stop after `depth` caused runs.
    static func observationDepth(_ depth: Int) -> RegistryConfiguration {
        var configuration = RegistryConfiguration()
        configuration.maxObservationDepth = depth
        return configuration
    }
}
