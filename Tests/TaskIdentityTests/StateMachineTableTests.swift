import Foundation
import Testing

@testable import TaskIdentity

/// Every (state, event) pair of `TaskStateMachine`, each with its expected outcome: the state
/// after the event, the effects the core must carry out, and the counters moved; or a trap, for
/// an event the rules rule out. Expectations are written by hand from the rules in
/// docs/state-machine.md, not recorded from the implementation.
@Suite("Task state machine: every state × every event")
struct StateMachineTableTests {
    @Test(arguments: StateMachineTable.allowedRows)
    func eachAllowedEventHasItsExpectedOutcome(row: StateMachineTable.Row) {
        var machine = row.state.machine
        var counters = RegistryCounters()
        let outcome = row.event.apply(to: &machine, counters: &counters)
        let summary = StateMachineTable.summary(machine, outcome, counters)
        #expect(summary == row.expected.resolved(for: row.state), "\(row.state) + \(row.event)")
        #expect(machine.brokenInvariant() == nil, "\(row.state) + \(row.event): \(machine)")
    }

    @Test(arguments: StateMachineTable.trappingRowIndices)
    func eachImpossibleEventTraps(index: Int) async {
        await #expect(processExitsWith: .failure) { [index] in
            let row = StateMachineTable.rows[index]
            var machine = row.state.machine
            var counters = RegistryCounters()
            _ = row.event.apply(to: &machine, counters: &counters)
        }
    }

    @Test func everyPairIsInTheTable() {
        let pairs = Set(StateMachineTable.rows.map { "\($0.state)+\($0.event)" })
        #expect(pairs.count == StateName.allCases.count * EventName.allCases.count)
        #expect(StateMachineTable.rows.count == pairs.count)
    }

    /// The table's events are exactly the events the registry sends: every `mutating func` of
    /// the machine that the sources call on a record's state (`….state.event(`) has its rows,
    /// and the table has no event that production never sends.
    @Test func theTableCoversExactlyTheEventsTheRegistrySends() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/TaskIdentity").standardized
        var sent: Set<String> = []
        // Every folder of the module (Core, Registry, Templates, …).
        let files = try #require(FileManager.default.subpaths(atPath: sources.path)).filter { $0.hasSuffix(".swift") }
        #expect(files.contains("Core/RegistryCore+Start.swift"), "the sources were found: \(sources.path)")
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /\.state\.([a-zA-Z]+)\(/) { sent.insert(String(match.1)) }
        }
        // Queries, not events: they change nothing.
        sent.subtract(["isCurrentRun", "brokenInvariant"])
        #expect(sent == Set(EventName.allCases.map(\.method)))
    }

    /// The stage has no case for these: building one from its parts traps.
    @Test(arguments: [
        "queued beside a run", "removed with a run", "removed with a pending generation",
    ])
    func noStageHoldsAnImpossibleCombination(combination: String) async {
        await #expect(processExitsWith: .failure) { [combination] in
            typealias M = TaskStateMachine
            switch combination {
            case "queued beside a run":
                _ = M.testState(generation: 2, runGeneration: 1, pending: .startQueued, run: .task, phase: .waiting)
            case "removed with a run":
                _ = M.testState(
                    generation: 1, runGeneration: 1, pending: .none, run: .task, isRemoved: true, phase: .running)
            default:
                _ = M.testState(
                    generation: 1, runGeneration: 0, pending: .debouncing, run: .none, isRemoved: true, phase: .waiting)
            }
        }
    }

    @Test func everyTableStateKeepsTheInvariants() {
        for state in StateName.allCases { #expect(state.machine.brokenInvariant() == nil, "\(state)") }
    }
}

/// The states of the table, each reachable through the registry.
enum StateName: String, CaseIterable, Sendable {
    case fresh, debouncing, debouncingWhileRunning, throttled, awaitingPrevious, queued, limitQueued, retrying
    case supersededInQueue
    case runningTask, runningShared, synchronousDelayed, synchronousExecuting, finished, ending
    case removedInQueue, removedEnding, removed

    var machine: TaskStateMachine {
        typealias M = TaskStateMachine
        switch self {
        case .fresh:
            return M.testState(generation: 0, runGeneration: 0, pending: .none, run: .none, phase: .idle)
        case .debouncing:
            return M.testState(
                generation: 1, runGeneration: 0, pending: .debouncing, run: .none, debounceDeadline: 100,
                phase: .waiting)
        case .debouncingWhileRunning:
            return M.testState(
                generation: 2, runGeneration: 1, pending: .debouncing, run: .task, hasStarted: true,
                debounceDeadline: 100, phase: .waiting)
        case .throttled:
            return M.testState(
                generation: 2, runGeneration: 1, pending: .throttled, run: .none, hasStarted: true, phase: .waiting)
        case .awaitingPrevious:
            return M.testState(
                generation: 2, runGeneration: 1, pending: .awaitingPrevious, run: .none, endingRuns: 1,
                hasStarted: true, phase: .waiting)
        case .queued:
            return M.testState(
                generation: 1, runGeneration: 0, pending: .startQueued, run: .none, inStartQueue: true,
                phase: .waitingUnpublished)
        case .limitQueued:
            return M.testState(
                generation: 1, runGeneration: 0, pending: .startLimited, run: .none, phase: .waiting)
        case .retrying:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .retrying, run: .none, hasStarted: true, phase: .waiting)
        case .supersededInQueue:
            return M.testState(
                generation: 2, runGeneration: 0, pending: .debouncing, run: .none, inStartQueue: true,
                debounceDeadline: 100, phase: .waiting)
        case .runningTask:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .task, hasStarted: true, phase: .running)
        case .runningShared:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .sharedTask, hasStarted: true, phase: .running)
        case .synchronousDelayed:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .synchronousDelayed, hasStarted: true,
                phase: .running)
        case .synchronousExecuting:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .synchronousExecuting, hasStarted: true,
                phase: .running)
        case .finished:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .none, hasStarted: true, phase: .finished)
        case .ending:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .none, endingRuns: 1, hasStarted: true,
                phase: .cancelled(.identityChanged))
        case .removedInQueue:
            return M.testState(
                generation: 1, runGeneration: 0, pending: .none, run: .none, isRemoved: true, inStartQueue: true,
                phase: .cancelled(.removed))
        case .removedEnding:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .none, endingRuns: 1, isRemoved: true,
                hasStarted: true, phase: .cancelled(.removed))
        case .removed:
            return M.testState(
                generation: 1, runGeneration: 1, pending: .none, run: .none, isRemoved: true, hasStarted: true,
                phase: .cancelled(.removed))
        }
    }
}

/// The events, with fixed arguments: the time is 50 for declarations and 100 when deadlines
/// come due; no throttle window is open. Declarations use `cancelPrevious` unless named
/// otherwise; the other events pass the gate of a `keepRunning` task (for tasks without a
/// current run it decides as `cancelPrevious` does, and a current run beside a pending
/// generation exists only under `keepRunning`).
enum EventName: String, CaseIterable, Sendable {
    case declareEqual, declareNew, declareNewDebounced, declareNewKeepRunning, debounceDue, throttleDue
    case startAllowed, runEndedCurrent, runEndedCancelled, remove, removeAtShutdown, progressDue
    case synchronousRunDue, cancelByCaller, dropPending, runNow, inheritEndingRuns, previousRunEnded, runTimedOut
    case startAtLimitFull, startAtLimitFree, admitted, retryDue, runFailedRetrying, runFailedLastAttempt
    case lastRunIsStale, runEndKept, refreshIsDue, runIsShared
    /// A new identity under `keepRunningDropNew`: the core asks `dropsNewIdentity`, then
    /// calls `dropNewIdentity` (busy) or `declare` (idle).
    case declareNewDropNew

    /// The machine's method the event calls.
    var method: String {
        switch self {
        case .declareEqual, .declareNew, .declareNewDebounced, .declareNewKeepRunning: return "declare"
        case .runEndedCurrent, .runEndedCancelled, .runFailedRetrying, .runFailedLastAttempt: return "runEnded"
        case .startAtLimitFull, .startAtLimitFree: return "startAtLimit"
        case .lastRunIsStale: return "isStale"
        case .runEndKept: return "keepsEnd"
        case .removeAtShutdown: return "remove"
        case .declareNewDropNew: return "dropNewIdentity"
        default: return rawValue
        }
    }

    func apply(to machine: inout TaskStateMachine, counters: inout RegistryCounters) -> String {
        typealias Gate = TaskStateMachine.StartGate
        let declared = Gate(policy: .cancelPrevious, throttleReadyAt: 0, now: 50)
        let due = Gate(policy: .keepRunning, throttleReadyAt: 100, now: 100)
        switch self {
        case .declareEqual:
            return describe(machine.declare(changed: false, debounce: 0, gate: declared, counters: &counters))
        case .declareNew:
            return describe(machine.declare(changed: true, debounce: 0, gate: declared, counters: &counters))
        case .declareNewDebounced:
            return describe(machine.declare(changed: true, debounce: 100, gate: declared, counters: &counters))
        case .declareNewKeepRunning:
            var gate = declared
            gate.policy = .keepRunning
            return describe(machine.declare(changed: true, debounce: 0, gate: gate, counters: &counters))
        case .debounceDue:
            return describe(machine.debounceDue(deadline: 100, gate: due))
        case .throttleDue:
            return describe(machine.throttleDue(gate: due))
        case .startAllowed:
            let started = machine.startAllowed(kind: .task, counters: &counters)
            return "result=" + (started.map { "g\($0)" } ?? "skip")
        case .runEndedCurrent:
            return describe(
                machine.runEnded(generation: 1, outcome: .finished, isShutDown: false, gate: due, counters: &counters))
        case .runEndedCancelled:
            return describe(
                machine.runEnded(generation: 99, outcome: .cancelled, isShutDown: false, gate: due, counters: &counters)
            )
        case .remove:
            return describe(machine.remove(reason: .removed, counters: &counters))
        case .removeAtShutdown:
            return describe(machine.remove(reason: .registryShutDown, counters: &counters))
        case .cancelByCaller:
            return describe(machine.cancelByCaller(counters: &counters))
        case .dropPending:
            return describe(machine.dropPending(reason: .pendingDropped, counters: &counters))
        case .runNow:
            return describe(machine.runNow(gate: due))
        case .inheritEndingRuns:
            machine.inheritEndingRuns(1)
            return ""
        case .previousRunEnded:
            return describe(machine.previousRunEnded(gate: due))
        case .progressDue:
            return machine.progressDue(generation: 1) ? "result=true" : ""
        case .synchronousRunDue:
            return machine.synchronousRunDue(generation: 1) ? "result=true" : ""
        case .runTimedOut:
            return describe(machine.runTimedOut(generation: 1, gate: due, counters: &counters))
        case .startAtLimitFull, .startAtLimitFree:
            let occupancy = TaskStateMachine.LimitOccupancy(isFull: self == .startAtLimitFull, othersWait: false)
            switch machine.startAtLimit(occupancy, counters: &counters) {
            case .start: return "result=start"
            case .movedOn: return "result=skip"
            case .waitInQueue(let effects): return describe(effects)
            }
        case .admitted:
            machine.admitted(counters: &counters)
            return ""
        case .retryDue:
            return describe(machine.retryDue(gate: due))
        case .runFailedRetrying:
            return describe(
                machine.runEnded(
                    generation: 1, outcome: .failed, isShutDown: false, attempts: .init(made: 1, allowed: 3), gate: due,
                    counters: &counters))
        case .runFailedLastAttempt:
            return describe(
                machine.runEnded(
                    generation: 1, outcome: .failed, isShutDown: false, attempts: .init(made: 3, allowed: 3), gate: due,
                    counters: &counters))
        case .lastRunIsStale:
            // Ended at 0, stale after 50, declared again at 100.
            let end = TaskStateMachine.RunEnd(generation: 1, at: 0)
            return machine.isStale(lastEnd: end, staleAfter: 50, now: 100) ? "result=true" : ""
        case .runEndKept:
            let ended = TaskStateMachine.PhaseChange(generation: 1, phase: .finished)
            return machine.keepsEnd(of: ended, isShutDown: false) ? "result=true" : ""
        case .runIsShared:
            machine.runIsShared()
            return ""
        case .refreshIsDue:
            let end = TaskStateMachine.RunEnd(generation: 1, at: 0)
            return machine.refreshIsDue(lastEnd: end, isShutDown: false) ? "result=true" : ""
        case .declareNewDropNew:
            if machine.dropsNewIdentity {
                machine.dropNewIdentity(counters: &counters)
                return "dropped"
            }
            var gate = declared
            gate.policy = .keepRunningDropNew
            return describe(machine.declare(changed: true, debounce: 0, gate: gate, counters: &counters))
        }
    }

    private func describe(_ effects: TaskStateMachine.Effects) -> String {
        var tokens: [String] = []
        if effects.stopThrottleTimer { tokens.append("stopThrottle") }
        // For a new identity or another reason (which the core notes first): the same task
        // cancelled; the reason is endedRun's.
        if effects.cancelled == .task || effects.cancelled == .taskForAReason { tokens.append("cancelTask") }
        if effects.cancelled == .sharedRun { tokens.append("leaveShared") }
        if effects.dropTask { tokens.append("dropTask") }
        if effects.actionNeverCalled { tokens.append("actionNeverCalled") }
        if effects.dropPendingAction { tokens.append("dropPending") }
        if let change = effects.endedPending { tokens.append("endedPending(g\(change.generation) \(change.phase))") }
        if let change = effects.endedRun { tokens.append("endedRun(g\(change.generation) \(change.phase))") }
        if effects.next != .none { tokens.append("next=\(effects.next)") }
        if let change = effects.waiting { tokens.append("waiting(g\(change.generation))") }
        return tokens.joined(separator: " ")
    }
}

enum StateMachineTable {
    struct Row: Sendable, CustomTestStringConvertible {
        let state: StateName
        let event: EventName
        let expected: Expected
        var testDescription: String { "\(state) + \(event)" }
    }

    enum Expected: Sendable {
        /// Nothing changes: a stale deadline, an equal-free event with nothing to act on.
        case ignored
        /// The declaration of an equal identity: counted, nothing else.
        case unchanged
        /// The rules rule the event out: the machine traps.
        case traps
        /// A new identity dropped (`keepRunningDropNew` on a busy task): counted, nothing else.
        case dropped
        /// "pending run gGeneration/runGeneration endingN phase [flags] | effects | counters".
        case becomes(String)

        func resolved(for state: StateName) -> String {
            switch self {
            case .ignored: return StateMachineTable.summary(state.machine, "", RegistryCounters())
            case .unchanged:
                var counters = RegistryCounters()
                counters.declared = 1
                counters.unchanged = 1
                return StateMachineTable.summary(state.machine, "", counters)
            case .traps: return "traps"
            case .dropped:
                var counters = RegistryCounters()
                counters.declared = 1
                counters.dropped = 1
                return StateMachineTable.summary(state.machine, "dropped", counters)
            case .becomes(let text): return text
            }
        }
    }

    static func summary(_ machine: TaskStateMachine, _ outcome: String, _ counters: RegistryCounters) -> String {
        var state =
            "\(machine.pending) \(machine.run.map { "\($0)" } ?? "none") g\(machine.generation)/\(machine.runGeneration)"
        state += " ending\(machine.endingRuns) \(machine.phase)"
        if machine.showsProgress { state += " progress" }
        if machine.isRemoved { state += " removed" }
        if machine.inStartQueue { state += " inQueue" }
        let moved: [(String, Int64)] = [
            ("declared", Int64(counters.declared)), ("unchanged", Int64(counters.unchanged)),
            ("started", Int64(counters.started)), ("restarted", Int64(counters.restarted)),
            ("coalesced", Int64(counters.coalesced)), ("cancelled", Int64(counters.cancelled)),
            ("finished", Int64(counters.finished)), ("failed", Int64(counters.failed)),
            ("timedOut", Int64(counters.timedOut)), ("retries", Int64(counters.retries)),
            ("queued", Int64(counters.queued)),
            ("queueLength", Int64(counters.queueLength)),
            ("runningActions", Int64(counters.runningActions)), ("liveGenerations", Int64(counters.liveGenerations)),
        ]
        let deltas = moved.filter { $0.1 != 0 }.map { "\($0.0)\($0.1 > 0 ? "+" : "")\($0.1)" }
        return "\(state) | \(outcome) | \(deltas.joined(separator: " "))"
    }

    static let allowedRows: [Row] = rows.filter { if case .traps = $0.expected { false } else { true } }
    static let trappingRowIndices: [Int] = rows.indices.filter {
        if case .traps = rows[$0].expected { true } else { false }
    }

    /// The rule of `keepRunningDropNew`, by state: a task with a run under way or a generation
    /// waiting drops the new identity; an idle one (never declared, its last run ended, or only
    /// cancelled runs still ending) takes it as `cancelPrevious` does; a removed one traps.
    static func dropNewExpectation(_ state: StateName, _ event: EventName, _ byEvent: [EventName: Expected])
        -> Expected
    {
        guard event == .declareNewDropNew else { return .ignored }
        switch state {
        case .fresh, .finished, .ending: return byEvent[.declareNew] ?? .ignored
        case .removedInQueue, .removedEnding, .removed: return .traps
        case .debouncing, .debouncingWhileRunning, .throttled, .awaitingPrevious, .queued, .limitQueued, .retrying,
            .supersededInQueue, .runningTask, .runningShared, .synchronousDelayed, .synchronousExecuting:
            return .dropped
        }
    }

    static let rows: [Row] = expectations.flatMap { state, byEvent in
        EventName.allCases.map { event in
            Row(state: state, event: event, expected: byEvent[event] ?? dropNewExpectation(state, event, byEvent))
        }
    }
}

extension TaskStateMachine {
    /// A state built from its parts, for the state-machine tests; traps on a combination no
    /// stage holds.
    static func testState(
        generation: UInt64, runGeneration: UInt64, pending: Pending, run: ActiveKind?, endingRuns: Int32 = 0,
        isRemoved: Bool = false, hasStarted: Bool = false, inStartQueue: Bool = false,
        debounceDeadline: UInt64 = 0, phase: Phase
    ) -> Self {
        var state = Self()
        state.generation = generation
        state.runGeneration = runGeneration
        state.endingRuns = endingRuns
        state.hasStarted = hasStarted
        state.inStartQueue = inStartQueue
        state.phase = phase
        let held: Held? =
            switch pending {
            case .none, .startQueued, .startLimited, .retrying: nil
            case .debouncing: .debouncing(deadline: debounceDeadline)
            case .throttled: .throttled
            case .awaitingPrevious: .awaitingPrevious
            }
        let active = run.map { ActiveRun(kind: $0) }
        switch (isRemoved, active, held, pending) {
        case (true, nil, nil, .none): state.stage = .removed
        case (false, nil, nil, .none): state.stage = .quiet
        case (false, nil, nil, .startQueued): state.stage = .waiting(.startQueued)
        case (false, nil, nil, .startLimited): state.stage = .waiting(.startLimited)
        case (false, nil, nil, .retrying): state.stage = .waiting(.retrying)
        case (false, nil, let held?, _): state.stage = .waiting(.held(held))
        case (false, let active?, nil, .none): state.stage = .running(active)
        case (false, let active?, let held?, _): state.stage = .heldBesideRun(held, active)
        default:
            preconditionFailure(
                "no stage holds \(pending) with \(run.map { "\($0)" } ?? "no run"), removed: \(isRemoved)")
        }
        return state
    }
}
