import Testing

@testable import TaskIdentity

/// The inputs of the state machine's run-control decisions, beyond the one fixed argument per
/// event of the state-machine table: each boundary of staleness, of a kept end, of a retry's
/// attempts and of a concurrency limit's occupancy.
@Suite("Task state machine: run-control decisions at their boundaries")
struct StateMachineDecisionTests {
    typealias Machine = TaskStateMachine

    /// A task whose generation 1 ran and finished.
    let finished = Machine.testState(
        generation: 1, runGeneration: 1, pending: .none, run: .none, hasStarted: true, phase: .finished)
    /// A task whose generation 1 is running as a Swift task.
    let running = Machine.testState(
        generation: 1, runGeneration: 1, pending: .none, run: .task, hasStarted: true, phase: .running)

    @Test func anOutcomeIsStaleFromTheMomentItsAgeReachesStaleAfter() {
        let end = Machine.RunEnd(generation: 1, at: 1_000)
        #expect(!finished.isStale(lastEnd: end, staleAfter: 500, now: 1_499))
        #expect(finished.isStale(lastEnd: end, staleAfter: 500, now: 1_500))
        #expect(finished.isStale(lastEnd: end, staleAfter: 0, now: 1_000))
        // An end of an older generation says nothing about the identity declared now.
        #expect(!finished.isStale(lastEnd: Machine.RunEnd(generation: 0, at: 0), staleAfter: 0, now: 1_500))
    }

    @Test(arguments: [
        (Machine.Phase.finished, true), (.failed, true), (.cancelled(.timedOut), true),
        (.cancelled(.actionCancelled), true), (.cancelled(.identityChanged), false), (.cancelled(.removed), false),
        (.cancelled(.cancelledByCaller), false), (.cancelled(.registryShutDown), false),
        (.cancelled(.supersededByPolicy), false),
    ])
    func onlyARunThatEndedOnItsOwnKeepsItsEnd(phase: Machine.Phase, kept: Bool) {
        let ended = Machine.PhaseChange(generation: 1, phase: phase)
        #expect(finished.keepsEnd(of: ended, isShutDown: false) == kept)
        #expect(!finished.keepsEnd(of: ended, isShutDown: true), "nothing is refreshed once shutdown has begun")
    }

    @Test func aRefreshIsDueOnlyWhileNothingHappenedSinceTheEnd() {
        let end = Machine.RunEnd(generation: 1, at: 0)
        #expect(finished.refreshIsDue(lastEnd: end, isShutDown: false))
        #expect(!finished.refreshIsDue(lastEnd: end, isShutDown: true))
        #expect(!running.refreshIsDue(lastEnd: end, isShutDown: false), "a run is under way")
        var declaredAgain = finished
        var counters = RegistryCounters()
        _ = declaredAgain.declare(changed: true, debounce: 0, gate: .unused, counters: &counters)
        #expect(!declaredAgain.refreshIsDue(lastEnd: end, isShutDown: false), "a new identity replaced it")
    }

    @Test(arguments: [(1, 3, 2), (2, 3, 3), (3, 3, nil), (0, 0, nil), (1, 1, nil)] as [(Int, Int, Int?)])
    func aFailureIsTriedAgainWhileItsPolicyHasAnAttemptLeft(made: Int, allowed: Int, next: Int?) {
        var machine = running
        var counters = RegistryCounters()
        let effects = machine.runEnded(
            generation: 1, outcome: .failed, isShutDown: false, attempts: .init(made: made, allowed: allowed),
            gate: .unused, counters: &counters)
        if let next {
            #expect(effects.next == .waitForRetry(attempt: next))
            #expect(machine.pending == .retrying && machine.phase == .waiting)
            #expect(counters.retries == 1 && counters.failed == 0)
        } else {
            #expect(effects.next == .none)
            #expect(machine.phase == .failed && counters.failed == 1 && counters.retries == 0)
        }
    }

    @Test func aSuccessOrACancellationIsNeverTriedAgain() {
        for outcome in [Machine.Outcome.finished, .cancelled] {
            var machine = running
            var counters = RegistryCounters()
            let effects = machine.runEnded(
                generation: 1, outcome: outcome, isShutDown: false, attempts: .init(made: 1, allowed: 3), gate: .unused,
                counters: &counters)
            #expect(effects.next == .none && machine.pending == .none && counters.retries == 0)
        }
    }

    @Test(arguments: [(false, false, true), (true, false, false), (false, true, false), (true, true, false)])
    func aGenerationStartsUnderItsLimitOnlyWithAPlaceFreeAndNoOneAhead(full: Bool, othersWait: Bool, starts: Bool) {
        var machine = Machine.testState(
            generation: 1, runGeneration: 0, pending: .startQueued, run: .none, inStartQueue: true,
            phase: .waitingUnpublished)
        var counters = RegistryCounters()
        switch machine.startAtLimit(.init(isFull: full, othersWait: othersWait), counters: &counters) {
        case .start:
            #expect(starts)
            #expect(machine.inStartQueue && machine.pending == .startQueued, "startAllowed takes it from here")
        case .waitInQueue(let effects):
            #expect(!starts)
            #expect(machine.pending == .startLimited && !machine.inStartQueue)
            #expect(effects.waiting?.generation == 1 && counters.queued == 1 && counters.queueLength == 1)
        case .movedOn:
            Issue.record("the queued generation had not moved on")
        }
    }

    @Test func aCancelledSharedRunIsLeftNotCancelled() {
        var machine = running
        machine.runIsShared()
        var counters = RegistryCounters()
        let effects = machine.cancelByCaller(counters: &counters)
        #expect(effects.cancelled == .sharedRun)
        #expect(machine.endingRuns == 1, "the slot still waits for the shared task's end")
        var own = running
        #expect(own.cancelByCaller(counters: &counters).cancelled == .taskForAReason, "its reason is noted first")
    }
}
