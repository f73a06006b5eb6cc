import Dispatch
import Testing
import UVLoop

@testable import TaskIdentity

/// `RegistryConfiguration.namesRuns` and `runName`: each run's Swift task carries a name
/// (SE-0469), read here with `Task.name` inside the action.
@Suite("Named runs")
struct NamedRunTests {
    static func registry(_ configure: (inout RegistryConfiguration) -> Void) throws -> (TestLoop, TaskRegistry<String>)
    {
        var configuration = RegistryConfiguration()
        configure(&configuration)
        let loop = TestLoop()
        return (loop, try TaskRegistry<String>(loop: loop, configuration: configuration))
    }

    @Test func runsAreUnnamedByDefault() throws {
        let (loop, registry) = try Self.registry { _ in }
        let names = Confined<[String?]>([])
        try registry.task("session-7", id: 1) { _ in names.value.append(Task.name) }
        loop.advance(by: .zero)
        #expect(names.value == [nil])
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    @Test func aNamedRunIsItsTaskNameKeyAndGeneration() throws {
        let (loop, registry) = try Self.registry { $0.namesRuns = true }
        let names = Confined<[String?]>([])
        try registry.task("session-7", id: 1) { _ in names.value.append(Task.name) }
        loop.advance(by: .zero)
        try registry.task("session-7", id: 2) { _ in names.value.append(Task.name) }
        try registry.task("session-7", name: "load", id: 1) { _ in names.value.append(Task.name) }
        loop.advance(by: .zero)
        // A template's action (keyed) and an action on another executor are named alike.
        let template = try TaskTemplate<String>(name: "presence") { _, _ in names.value.append(Task.name) }
        try registry.task("session-8", id: 5, template: template)
        loop.advance(by: .zero)
        let offLoop = Locked<String?>(nil)
        let named = DispatchSemaphore(value: 0)
        try registry.task("session-9", id: 1, executor: .global) { _ in
            offLoop.withLock { $0 = Task.name }
            named.signal()
        }
        loop.advance(by: .zero)
        named.wait()  // the action runs on the global executor, without this thread
        #expect(names.value == ["main session-7#1", "main session-7#2", "load session-7#1", "presence session-8#1"])
        #expect(offLoop.withLock { $0 } == "main session-9#1")
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }

    @Test func theCallersFunctionNamesRunsFromKeyAndIdentity() throws {
        let (loop, registry) = try Self.registry { $0.runName = { key, identity in "search \(key) for \(identity)" } }
        let names = Confined<[String?]>([])
        try registry.task("session-7", id: "swift") { _ in names.value.append(Task.name) }
        loop.advance(by: .zero)
        #expect(names.value == ["search session-7 for swift"])
        registry.startShutdown()
        loop.run()
        loop.shutdown()
    }
}
