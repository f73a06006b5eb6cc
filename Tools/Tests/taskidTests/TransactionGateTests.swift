import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

@Suite("TransactionGate")
struct TransactionGateTests {
    /// Records the order in which tasks on the loop pass the gate.
    final class Trace: Sendable {
        let events: LoopBound<[String]>
        init(loop: UVLoop) { events = LoopBound([], loop: loop) }
    }

    @Test func aTransactionWaitsForRunningTurnsAndHoldsNewOnesOff() async throws {
        let loop = UVLoop(name: "gate")
        try loop.start()
        let gate = TransactionGate(loop: loop)
        let trace = Trace(loop: loop)
        let events = await Task(executorPreference: loop) { () async -> [String] in
            await gate.enter()  // turn A is running (suspended, say, in a hop to another loop)
            let transaction = Task(executorPreference: loop) {
                await gate.enterExclusive()
                trace.events.value.append("exec begins")
                await Task.yield()  // the transaction's own hop: no turn may slip in
                trace.events.value.append("exec ends")
                gate.leaveExclusive()
            }
            await Task.yield()
            let lateTurn = Task(executorPreference: loop) {
                await gate.enter()
                trace.events.value.append("turn B")
                gate.leave()
            }
            await Task.yield()
            trace.events.value.append("turn A ends")
            gate.leave()
            await transaction.value
            await lateTurn.value
            return trace.events.value
        }.value
        #expect(events == ["turn A ends", "exec begins", "exec ends", "turn B"])
        try loop.syncShutdown()
    }
}
