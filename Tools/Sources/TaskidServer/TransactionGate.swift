import UVLoop

/// Keeps every other client's commands out of a running `EXEC`, when commands can suspend.
///
/// A client's *turn* is the run of commands it executes between two reads; with more than one
/// loop, a turn can suspend (a `GET` hops to its key's shard loop) and another client's turn
/// can then run. `EXEC` leaves its own turn and waits for exclusive use: no turn is running,
/// and new turns wait until the transaction's commands have all run. Waiting transactions go
/// before new turns, so a steady stream of requests cannot starve one.
///
/// Front loop only (its state is a `LoopBound`, checked on each access). Per turn it costs two
/// accesses, and it exists only when the server has more than one loop.
package final class TransactionGate: Sendable {
    private struct State {
        var activeTurns = 0
        var exclusive = false
        var turnWaiters: [UnsafeContinuation<Void, Never>] = []
        var exclusiveWaiters: [UnsafeContinuation<Void, Never>] = []
    }

    private let state: LoopBound<State>

    /// A gate for the clients of `loop`. Any thread.
    package init(loop: UVLoop) { state = LoopBound(State(), loop: loop) }

    /// Begins a turn, waiting while a transaction runs or waits. Front loop only.
    package func enter() async {
        if !state.value.exclusive && state.value.exclusiveWaiters.isEmpty {
            state.value.activeTurns += 1
            return
        }
        // `admitNext` counts the turn before it resumes us.
        await withUnsafeContinuation { state.value.turnWaiters.append($0) }
    }

    /// Ends a turn begun with `enter`. Front loop only.
    package func leave() {
        state.value.activeTurns -= 1
        admitNext()
    }

    /// Waits until no turn runs, then holds the gate. Call it outside a turn. Front loop only.
    package func enterExclusive() async {
        if state.value.activeTurns == 0 && !state.value.exclusive {
            state.value.exclusive = true
            return
        }
        await withUnsafeContinuation { state.value.exclusiveWaiters.append($0) }
    }

    /// Releases the gate held with `enterExclusive`. Front loop only.
    package func leaveExclusive() {
        state.value.exclusive = false
        admitNext()
    }

    /// When the gate is free: the next transaction, else every waiting turn.
    private func admitNext() {
        guard !state.value.exclusive, state.value.activeTurns == 0 else { return }
        if !state.value.exclusiveWaiters.isEmpty {
            state.value.exclusive = true
            state.value.exclusiveWaiters.removeFirst().resume()
            return
        }
        let waiters = state.value.turnWaiters
        state.value.turnWaiters.removeAll()
        state.value.activeTurns += waiters.count
        for waiter in waiters { waiter.resume() }
    }

    /// Whether a transaction holds the gate. Front loop only (tests).
    package var isHeldExclusively: Bool { state.value.exclusive }
}
