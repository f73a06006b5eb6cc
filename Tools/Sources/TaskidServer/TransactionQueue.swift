/// The commands a client queued since `MULTI`, kept compactly: every argument's bytes in one
/// array, and 4 bytes of bookkeeping per argument and per command. (An array per argument, as
/// before, took 312 bytes of memory for a queued `SET key:000001 v`; this takes 34.) A value
/// type, owned by the connection's task on the front loop.
package struct TransactionQueue {
    /// Every queued argument's bytes, back to back.
    private var bytes: [UInt8] = []
    /// Where each argument ends in `bytes`.
    private var argumentEnds: [UInt32] = []
    /// How many arguments each command has, its name included.
    private var argumentCounts: [UInt32] = []

    /// The most bytes a queue may account for: its offsets are 32-bit.
    package static let largestCapacity = Int(UInt32.max)

    /// Commands queued.
    var count: Int { argumentCounts.count }

    /// In cluster mode, the slots of the keys queued.
    var slots = TransactionSlots()

    /// What the queue accounts for: its arguments' bytes plus 4 per argument and 4 per command.
    private(set) var accountedBytes = 0

    /// What queuing `request` would add to `accountedBytes`.
    package static func cost(of request: [ArraySlice<UInt8>]) -> Int {
        request.reduce(4) { $0 + $1.count + 4 }
    }

    /// Queues a copy of `request`. The caller has checked `accountedBytes + cost(of:)` against
    /// its cap, which is at most `largestCapacity`.
    mutating func append(_ request: [ArraySlice<UInt8>]) {
        for argument in request {
            bytes.append(contentsOf: argument)
            argumentEnds.append(UInt32(bytes.count))
        }
        argumentCounts.append(UInt32(request.count))
        accountedBytes += Self.cost(of: request)
    }

    /// The queued commands in order, each as slices of the queue's one byte array.
    var commands: [[ArraySlice<UInt8>]] {
        var commands: [[ArraySlice<UInt8>]] = []
        commands.reserveCapacity(count)
        var argument = 0
        var start = 0
        for argumentCount in argumentCounts {
            var command: [ArraySlice<UInt8>] = []
            command.reserveCapacity(Int(argumentCount))
            for _ in 0..<argumentCount {
                let end = Int(argumentEnds[argument])
                command.append(bytes[start..<end])
                start = end
                argument += 1
            }
            commands.append(command)
        }
        return commands
    }
}

/// In cluster mode, the slots a transaction's queued keys hash to: they must all be one, as in
/// Redis Cluster, or `EXEC` answers `-CROSSSLOT` and runs nothing. A value type; owned by the
/// connection's task on the front loop.
package struct TransactionSlots {
    /// The slot of the first key queued.
    private(set) var first: Int?
    /// Whether a later key hashed to another slot.
    private(set) var spanSeveral = false

    mutating func note(_ slot: Int) {
        if let first {
            if first != slot { spanSeveral = true }
        } else {
            first = slot
        }
    }
}

/// Where a client stands with `MULTI`. Owned by the connection's task on the front loop.
package enum TransactionState {
    /// Commands run as they arrive.
    case none
    /// Inside `MULTI`: commands are queued for `EXEC`.
    case queuing(TransactionQueue)
    /// Inside `MULTI`, after a command was refused (unknown, wrong arity, another node's keys,
    /// or past the queue's cap): commands are still taken, not kept (only their slots); `EXEC`
    /// runs nothing and answers `EXECABORT` (or `CROSSSLOT`, over several slots), as Redis does.
    case doomed(TransactionSlots)

    /// The slots of the keys queued so far (none outside a transaction).
    var slots: TransactionSlots {
        switch self {
        case .none: return TransactionSlots()
        case .queuing(let queue): return queue.slots
        case .doomed(let slots): return slots
        }
    }
}
