#if Etcd
    @testable import TaskidCluster

    /// Nodes' `OwnershipMachine`s against a `FakeEtcd`, in virtual time: every effect is carried
    /// out as `EtcdOwnership` carries it out, each call reaching etcd `latency` after it is made
    /// and answered `latency` after that, and every fault of the chaos check can be made: a node
    /// killed, paused, joining or leaving, etcd down (then restarted) or stalled, a second node
    /// under one id, a watch's stale events. After every step it checks that no two nodes serve
    /// one block, and that a node serves a block only while etcd names it the owner under a live
    /// lease. Each node's server keeps the values written to its blocks, so that a block that
    /// moved or was emptied shows. Deterministic; test thread only.
    struct OwnershipSimulation {
        static let leaseSeconds = 2
        static let lease: UInt64 = 2_000_000_000
        let latency: UInt64 = 1_000_000

        final class Node {
            let id: String
            let address: String
            var machine: OwnershipMachine
            var alive = true
            var paused = false
            /// Events that reached the node while it was paused, delivered when it wakes.
            var held: [OwnershipEvent] = []
            var timers: [OwnershipTimer: UInt64] = [:]
            /// The watch: its number and the revision it has delivered up to.
            var watch: (number: UInt64, delivered: Int64)?
            /// The view the server serves, and the values its blocks hold.
            var view: OwnershipView?
            var values: [Int: [String]] = [:]
            var logs: [String] = []

            init(id: String, address: String, waitForID: Bool, incarnation: UInt64) {
                self.id = id
                self.address = address
                machine = OwnershipMachine(
                    nodeID: id, address: address, prefix: "/taskid/sim/",
                    leaseSeconds: OwnershipSimulation.leaseSeconds,
                    waitForID: waitForID, incarnation: incarnation)
            }

            /// Whether the node's server answers for `block` at `now`: its view names it, and
            /// its fence is open.
            func serves(_ block: Int, at now: UInt64) -> Bool {
                guard alive, !paused, let view else { return false }
                // As the server decides: the view names it, and the fence is open.
                return view.blocks[block].owner == id && now < view.servingUntil
            }
        }

        enum EtcdState: Equatable {
            case up, down, stalled
        }

        private enum Action {
            case event(Int, OwnershipEvent)
            case call(Int, OwnershipEffect)
            case timer(Int, OwnershipTimer, UInt64)
            case adopt(Int, OwnershipView, UInt64)
            case tick
        }

        private(set) var now: UInt64 = 0
        var etcd = FakeEtcd()
        private(set) var etcdState = EtcdState.up
        private var stalledCalls: [(Int, OwnershipEffect)] = []
        private(set) var nodes: [Node] = []
        private var queue: [(time: UInt64, order: UInt64, action: Action)] = []
        private var order: UInt64 = 0
        /// Nodes whose releases etcd applies but whose answers are lost.
        var releaseAnswersLost: Set<Int> = []
        /// Nodes whose watch has gone silent (a half-open connection): it delivers nothing
        /// until they leave the set (a read of the map still answers).
        var silentWatches: Set<Int> = []
        /// What the invariants found, as sentences; empty when they held throughout.
        private(set) var violations: [String] = []

        init() { schedule(.tick, at: 0) }

        /// Starts a node; returns its index.
        @discardableResult
        mutating func start(_ id: String, address: String? = nil, waitForID: Bool = false) -> Int {
            let index = nodes.count
            nodes.append(
                Node(
                    id: id, address: address ?? "10.0.0.\(index + 1):6380", waitForID: waitForID,
                    incarnation: UInt64(index + 1)))
            schedule(.event(index, .start), at: now)
            return index
        }

        /// Runs until virtual time `seconds` later.
        mutating func run(for seconds: Double) {
            let end = now + UInt64(seconds * 1e9)
            while let next = queue.first, next.time <= end {
                let item = queue.removeFirst()
                now = item.time
                perform(item.action)
                checkInvariants()
            }
            now = end
        }

        // MARK: - Faults

        /// SIGKILL: the node does nothing more; its lease expires in etcd.
        mutating func kill(_ node: Int) { nodes[node].alive = false }

        /// SIGSTOP and SIGCONT.
        mutating func pause(_ node: Int) { nodes[node].paused = true }
        mutating func resume(_ node: Int) {
            nodes[node].paused = false
            let held = nodes[node].held
            nodes[node].held = []
            for event in held { schedule(.event(node, event), at: now) }
            for (timer, due) in nodes[node].timers { schedule(.timer(node, timer, due), at: max(due, now)) }
        }

        /// SIGTERM: the node hands its blocks over.
        mutating func leave(_ node: Int) { schedule(.event(node, .leave), at: now) }

        /// etcd killed: every call fails and every watch ends, until `restartEtcd`.
        mutating func stopEtcd() {
            etcdState = .down
            for index in nodes.indices {
                if let watch = nodes[index].watch {
                    nodes[index].watch = nil
                    schedule(.event(index, .watchEnded(number: watch.number, "connection refused")), at: now + latency)
                }
            }
        }

        mutating func restartEtcd() {
            etcdState = .up
            etcd.restart(at: now)
        }

        /// etcd SIGSTOPped: calls wait, leases keep running out by its clock.
        mutating func stallEtcd() { etcdState = .stalled }

        /// etcd SIGCONT: the leases that ran out go first, then the calls that waited.
        mutating func resumeEtcd() {
            etcdState = .up
            etcd.expireLeases(at: now)
            pumpWatches()
            let waiting = stalledCalls
            stalledCalls = []
            for (node, call) in waiting { perform(.call(node, call)) }
        }

        /// Delivers `changes` to `node` as its watch's, as a lagging watch would; false when the
        /// node has no watch to deliver them on.
        mutating func deliverStale(_ changes: [EtcdChange], to node: Int) -> Bool {
            guard let watch = nodes[node].watch else { return false }
            schedule(.event(node, .watched(number: watch.number, changes)), at: now)
            return true
        }

        /// Writes `value` to every block `node` serves now (a client's SET, acknowledged).
        mutating func write(_ value: String, by node: Int) {
            for block in 0..<SlotBlocks.count where nodes[node].serves(block, at: now) {
                nodes[node].values[block, default: []].append(value)
            }
        }

        // MARK: - What the nodes do

        /// Keeps `queue` in (time, order) order: the next action is its first.
        private mutating func schedule(_ action: Action, at time: UInt64) {
            order += 1
            var low = 0
            var high = queue.count
            while low < high {
                let middle = (low + high) / 2
                if queue[middle].time <= time { low = middle + 1 } else { high = middle }
            }
            queue.insert((time, order, action), at: low)
        }

        private mutating func perform(_ action: Action) {
            switch action {
            case .tick:
                if etcdState == .up {
                    etcd.expireLeases(at: now)
                    pumpWatches()
                }
                schedule(.tick, at: now + 10_000_000)
            case .event(let index, let event):
                let node = nodes[index]
                guard node.alive else { return }
                guard !node.paused else { return node.held.append(event) }
                for effect in node.machine.handle(event, at: now) { carryOut(effect, for: index) }
            case .timer(let index, let timer, let due):
                let node = nodes[index]
                guard node.alive, !node.paused, node.timers[timer] == due else { return }
                node.timers[timer] = nil
                perform(.event(index, .timerFired(timer)))
            case .adopt(let index, let view, let number):
                guard nodes[index].alive else { return }
                // A stopped process takes no view: it takes it once woken.
                guard !nodes[index].paused else { return schedule(.adopt(index, view, number), at: now + 10_000_000) }
                nodes[index].view = view
                perform(.event(index, .published(number: number)))
            case .call(let index, let call):
                answer(call, for: index)
            }
        }

        private mutating func carryOut(_ effect: OwnershipEffect, for index: Int) {
            let node = nodes[index]
            switch effect {
            case .schedule(let timer, let delay):
                node.timers[timer] = now + delay
                schedule(.timer(index, timer, now + delay), at: now + delay)
            case .log(let level, let text):
                node.logs.append("\(level): \(text)")
            case .publish(let view, let number):
                schedule(.adopt(index, view, number), at: now + latency)
            case .empty(let blocks):
                for block in blocks { node.values[block] = nil }
                schedule(.event(index, .emptied(blocks: blocks, succeeded: true)), at: now + latency)
            case .watch(let number, let after):
                node.watch = nil
                schedule(.call(index, .watch(number: number, after: after)), at: now + latency)
            default:
                schedule(.call(index, effect), at: now + latency)
            }
        }

        /// A call reaching etcd: answered `latency` later, failed when etcd is down, held while
        /// it is stalled.
        private mutating func answer(_ call: OwnershipEffect, for index: Int) {
            guard nodes[index].alive else { return }
            switch etcdState {
            case .stalled: return stalledCalls.append((index, call))
            case .down:
                if let failure = Self.failure(of: call, "connection refused") {
                    schedule(.event(index, failure), at: now + latency)
                }
                return
            case .up: break
            }
            etcd.expireLeases(at: now)
            let machine = nodes[index].machine
            let prefix = "/taskid/sim/"
            var reply: OwnershipEvent?
            do {
                switch call {
                case .grantLease(let seconds, let sentAt):
                    let granted = etcd.grantLease(seconds: seconds, at: now)
                    reply = .leaseGranted(id: granted.id, ttl: granted.ttl, sentAt: sentAt)
                case .register(let grant):
                    let result = try etcd.createIfAbsent(
                        prefix + "members/" + machine.nodeID, value: machine.address, lease: grant)
                    reply = .registrationAnswered(grant: grant, succeeded: result.succeeded)
                case .readHolder(let grant):
                    reply = .holderRead(grant: grant, holder: etcd.value(of: prefix + "members/" + machine.nodeID))
                case .keepAlive(let lease, let sentAt):
                    reply = .renewalAnswered(lease: lease, ttlLeft: etcd.keepAlive(lease, at: now), sentAt: sentAt)
                case .revoke(let lease):
                    etcd.revoke(lease)
                case .readMap:
                    let read = etcd.read(prefix: prefix)
                    reply = .mapRead(revision: read.revision, values: read.values)
                case .watch(let number, let after):
                    nodes[index].watch = (number, after)
                case .claim(let block, let lease, let lastClaimant):
                    let result = try etcd.claim(
                        prefix + "blocks/\(block)", value: machine.nodeID, lease: lease,
                        claimsKey: prefix + "claims/\(block)", claimant: machine.claimant, ifLastClaimant: lastClaimant)
                    reply = .claimAnswered(block: block, lease: lease, result)
                case .release(let block, let lease):
                    let result = etcd.release(
                        prefix + "blocks/\(block)", value: machine.nodeID, lease: lease,
                        claimsKey: prefix + "claims/\(block)")
                    // Applied, but the answer lost (a time-out): the node hears a failure.
                    reply =
                        releaseAnswersLost.contains(index)
                        ? .releaseFailed(block: block, "timed out") : .releaseAnswered(block: block, result)
                default:
                    break
                }
            } catch {
                reply = Self.failure(of: call, "\(error)")
            }
            if let reply { schedule(.event(index, reply), at: now + latency) }
            pumpWatches()
        }

        /// The event that says `call` failed with `reason`.
        private static func failure(of call: OwnershipEffect, _ reason: String) -> OwnershipEvent? {
            switch call {
            case .grantLease: .leaseGrantFailed(reason)
            case .register(let grant): .registrationFailed(grant: grant, reason)
            case .readHolder(let grant): .holderReadFailed(grant: grant, reason)
            case .keepAlive(let lease, _): .renewalFailed(lease: lease, reason)
            case .readMap: .mapReadFailed(reason)
            case .watch(let number, _): .watchEnded(number: number, reason)
            case .claim(let block, _, _): .claimFailed(block: block, reason)
            case .release(let block, _): .releaseFailed(block: block, reason)
            default: nil
            }
        }

        /// Sends each watch the changes it has not delivered yet.
        private mutating func pumpWatches() {
            for index in nodes.indices {
                guard let watch = nodes[index].watch, nodes[index].alive, !silentWatches.contains(index) else {
                    continue
                }
                let changes = etcd.changes(after: watch.delivered)
                guard !changes.isEmpty else { continue }
                nodes[index].watch = (watch.number, etcd.revision)
                schedule(.event(index, .watched(number: watch.number, changes)), at: now + latency)
            }
        }

        static let blockKeys = (0..<SlotBlocks.count).map { "/taskid/sim/blocks/\($0)" }

        private mutating func checkInvariants() {
            var servingNode = [Int](repeating: -1, count: SlotBlocks.count)
            for (index, node) in nodes.enumerated() {
                guard node.alive, !node.paused, let view = node.view, now < view.servingUntil else { continue }
                for block in 0..<SlotBlocks.count where view.blocks[block].owner == node.id {
                    if servingNode[block] >= 0 {
                        violations.append(
                            "\(now): block \(block) served by \(nodes[servingNode[block]].id) and \(node.id)")
                    }
                    servingNode[block] = index
                    // etcd holds this very claim (not a later one of the same id), on a live lease.
                    let claim = etcd.keys[Self.blockKeys[block]]
                    if claim?.value != node.id || claim?.createRevision != view.blocks[block].claimRevision
                        || !etcd.isAlive(claim?.lease ?? "", at: now)
                    {
                        violations.append("\(now): \(node.id) serves block \(block), which etcd does not give it")
                    }
                }
            }
        }
    }
#endif
