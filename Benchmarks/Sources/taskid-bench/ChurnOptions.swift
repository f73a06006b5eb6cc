import ArgumentParser
import Foundation
import Synchronization
import TaskIdentity
import UVLoop

// The churn workloads' options: where actions run, what they compute, which registry API declares.
/// Where the registry's actions run (`--executor`).
enum ExecutorChoice: String, ExpressibleByArgument {
    case loop
    case global

    var actionExecutor: ActionExecutor { self == .loop ? .loop : .global }
}

/// Computes (spins) for `microseconds` of wall time on the calling thread, a CPU-bound action
/// that checks for cancellation as it goes, as cooperative work does: a cancelled action stops
/// early instead of finishing work nobody wants.
@inline(never)
func computeFor(microseconds: Int) {
    let deadline = monotonicNanoseconds() &+ UInt64(microseconds) &* 1_000
    while monotonicNanoseconds() < deadline && !Task.isCancelled {}
}

/// How the churn driver declares identity changes to the registry.
enum RegistryAPI: String, ExpressibleByArgument {
    case template
    case closure
    /// A `TaskTemplate.synchronous` template: the action is called on the loop, no Swift task.
    case synchronous
}

/// One identity change, declared through the chosen API, for one shard. Either way the action
/// commits the change's (slot, generation) to the shard's ledger part; with a template the slot
/// comes from the run's key and the generation from its context (each change is a new
/// identity, so they agree). An action off the loop computes there and posts its commit to the
/// loop (`postCommit`).
struct Declarer: Sendable {
    let api: RegistryAPI
    let executor: ActionExecutor
    let debounce: Duration
    let actionMicroseconds: Int
    let ledger: ShardLedger
    let template: TaskTemplate<Int>

    init(
        api: RegistryAPI, executor: ExecutorChoice, debounce: Duration, actionMicroseconds: Int,
        ledger part: SlotLedger,
        shardCount: Int
    ) throws {
        self.api = api
        self.executor = executor.actionExecutor
        self.debounce = debounce
        self.actionMicroseconds = actionMicroseconds
        let ledger = ShardLedger(part: part, shardCount: shardCount)
        self.ledger = ledger
        if api == .synchronous {
            template = try .synchronous(debounce: debounce) { slot, context in
                if actionMicroseconds > 0 { computeFor(microseconds: actionMicroseconds) }
                context.commit { ledger.complete(slot: slot, generation: context.generation) }
            }
        } else if executor == .loop {
            template = try TaskTemplate<Int>(debounce: debounce) { slot, context in
                if actionMicroseconds > 0 { computeFor(microseconds: actionMicroseconds) }
                context.commit { ledger.complete(slot: slot, generation: context.generation) }
            }
        } else {
            template = try TaskTemplate<Int>(debounce: debounce, executor: executor.actionExecutor) { slot, context in
                if actionMicroseconds > 0 { computeFor(microseconds: actionMicroseconds) }
                context.postCommit { ledger.complete(slot: slot, generation: context.generation) }
            }
        }
    }

    @inline(__always)
    func callAsFunction(_ registry: TaskRegistry<Int>, slot: Int, generation: UInt64) throws {
        switch api {
        case .template, .synchronous:
            try registry.task(slot, id: generation, template: template)
        case .closure:
            let (ledger, actionMicroseconds) = (self.ledger, self.actionMicroseconds)
            if executor == .loop {
                try registry.task(slot, id: generation, debounce: debounce) { context in
                    if actionMicroseconds > 0 { computeFor(microseconds: actionMicroseconds) }
                    context.commit { ledger.complete(slot: slot, generation: generation) }
                }
            } else {
                try registry.task(slot, id: generation, debounce: debounce, executor: executor) { context in
                    if actionMicroseconds > 0 { computeFor(microseconds: actionMicroseconds) }
                    context.postCommit { ledger.complete(slot: slot, generation: generation) }
                }
            }
        }
    }
}
