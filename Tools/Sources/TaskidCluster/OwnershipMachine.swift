#if Etcd
    import Logging

    /// Slot ownership on etcd for one node, as a state machine: events in (an answer from etcd,
    /// a watch's changes, a timer, the server having taken a view), effects out (calls to make,
    /// timers to set, a view for the server to serve, lines to log). It does no I/O and reads no
    /// clock: `EtcdOwnership` runs it against etcd, and the tests run it against an in-memory
    /// store in virtual time.
    ///
    /// Keys, under the cluster's prefix:
    /// - `members/<id>` = `host:port`, bound to the node's lease: the node is alive, and the only
    ///   one under its id;
    /// - `blocks/<n>` = `<id>`, bound to the owner's lease: block n (`SlotBlocks`) is the
    ///   owner's. A lease that expires takes its keys with it, and the survivors claim them;
    /// - `claims/<n>` = `<id> <incarnation>`, no lease: who claimed block n last and did not
    ///   give it back, so that a node whose lease lapsed while it lived claims back what it
    ///   served, with what it holds (no other node can have served it meanwhile).
    ///
    /// A node serves a block only while etcd names it the owner under its current lease, the
    /// block has been emptied (or is still under the claim it was emptied under), and its lease
    /// fence (`LeaseFence`) is open. A value type; its owner calls it from one task at a time.
    package struct OwnershipMachine: Sendable {
        /// This node's id, and the address clients are sent to (`host:port`).
        package let nodeID: String
        package let address: String
        let prefix: String
        let leaseSeconds: Int
        /// `--wait-for-id`: at start, wait for a live node holding this id to go.
        let waitForID: Bool
        /// This process among every run of this node's id (`claims/<n>` holds it).
        package let claimant: String

        /// The live members, id to address, as etcd last said.
        package internal(set) var members: [String: String] = [:]
        /// Each block as this node knows it.
        package internal(set) var blocks = [BlockState](repeating: BlockState(), count: SlotBlocks.count)
        /// The map has been read at least once: until then the node claims nothing.
        var hasRead = false
        /// The watch whose changes are taken in; a replaced watch's late changes are dropped.
        var watchNumber: UInt64 = 0

        var lease = LeasePhase.none
        var fence = LeaseFence(ttlNanoseconds: 3_000_000_000, marginNanoseconds: 1_000_000_000)
        /// Registered at least once: its id was free then, so a later refusal of the id is a node
        /// that took it since, not one that was there first.
        var registeredOnce = false
        /// The node holding this node's id, found at start: the server refuses to start.
        package internal(set) var idTakenBy: String?
        /// After registering again past a lost lease, until this time, blocks whose last
        /// claimant is another node are left to it: an etcd stall past the lease expires every
        /// node's lease at once, and each comes back for its own blocks.
        var othersBlocksWaitUntil: UInt64 = 0
        /// Why the node does not serve its share yet (`readiness`).
        var waitingReason = "registering on etcd"
        /// Handing over (SIGTERM): claims nothing more; the blocks it owned then.
        package internal(set) var leaving = false
        var handedOverBlocks: [Int] = []
        /// The lease to revoke once the server has taken view `revokeAfterView`, which serves
        /// nothing.
        var leaseToRevoke: String?
        var revokeAfterView: UInt64?
        /// No new claim, release or emptying before this time: one failed, and etcd or the
        /// server is not answering (cleared at each renewal, which tries them again).
        var pausedUntil: UInt64 = 0
        /// When `noteProblem` last logged.
        var problemLoggedAt: UInt64?

        /// The number of the last view handed out, the last view, and each view in flight with
        /// the blocks it serves (until the server says it took it).
        var viewNumber: UInt64 = 0
        var lastView: OwnershipView?
        var viewsInFlight: [UInt64: Set<Int>] = [:]
        /// The blocks served in the latest view the server took, and its number.
        package internal(set) var publishedServed: Set<Int> = []
        package internal(set) var publishedNumber: UInt64 = 0

        /// A node `nodeID` reached at `address`, on the cluster under `prefix`, with leases of
        /// `leaseSeconds`; `incarnation` tells this process from earlier runs of the id.
        package init(
            nodeID: String, address: String, prefix: String, leaseSeconds: Int, waitForID: Bool, incarnation: UInt64
        ) {
            self.nodeID = nodeID
            self.address = address
            self.prefix = prefix
            self.leaseSeconds = leaseSeconds
            self.waitForID = waitForID
            claimant = "\(nodeID) \(String(incarnation, radix: 16))"
        }

        /// The lease: none, being granted or registered, held, or given up.
        enum LeasePhase: Equatable {
            case none
            case granting
            /// Granted at `sentAt`; registering `members/<id>` on it.
            case registering(grant: String, ttl: Int, sentAt: UInt64)
            /// Held: the node's lease.
            case held(id: String, ttl: Int)
            /// Another live node holds the id (at start): nothing more is tried.
            case refused
        }

        /// The lease the node holds, nil when none.
        package var leaseID: String? {
            if case .held(let id, _) = lease { return id }
            return nil
        }

        var leaseNanoseconds: UInt64 {
            if case .held(_, let ttl) = lease { return UInt64(ttl) * 1_000_000_000 }
            return UInt64(leaseSeconds) * 1_000_000_000
        }

        var memberPrefix: String { prefix + "members/" }
        var blockPrefix: String { prefix + "blocks/" }
        var claimsPrefix: String { prefix + "claims/" }

        /// Handles `event` at `now` (monotonic nanoseconds): the effects to carry out, in order.
        package mutating func handle(_ event: OwnershipEvent, at now: UInt64) -> [OwnershipEffect] {
            var effects: [OwnershipEffect] = []
            switch event {
            case .start:
                lease = .granting
                effects += [.grantLease(seconds: leaseSeconds, sentAt: now), .readMap]
            case .timerFired(let timer):
                timerFired(timer, at: now, into: &effects)
            case .mapRead(let revision, let values):
                take(values, readAt: revision)
                watchNumber += 1
                effects += [
                    .watch(number: watchNumber, after: revision),
                    .schedule(.mapRefresh, afterNanoseconds: UInt64(leaseSeconds) * 1_000_000_000),
                ]
            case .mapReadFailed(let reason):
                noteProblem("etcd: could not read the map (\(reason)); reading it again", at: now, into: &effects)
                effects.append(.schedule(.mapRetry, afterNanoseconds: 200_000_000))
            case .watched(let number, let changes):
                guard number == watchNumber else { break }  // a watch since replaced
                for change in changes { apply(change) }
            case .watchEnded(let number, let reason):
                guard number == watchNumber else { break }
                noteProblem("etcd: watch ended (\(reason)); reading the map again", at: now, into: &effects)
                effects.append(.schedule(.mapRetry, afterNanoseconds: 200_000_000))
            case .leave:
                leave(into: &effects)
            default:
                handleLeaseEvent(event, at: now, into: &effects)
                handleClaimEvent(event, at: now, into: &effects)
            }
            advance(at: now, into: &effects)
            return effects
        }

        private mutating func timerFired(_ timer: OwnershipTimer, at now: UInt64, into effects: inout [OwnershipEffect])
        {
            switch timer {
            case .grantLease:
                guard !leaving, lease == .none else { return }
                lease = .granting
                effects.append(.grantLease(seconds: leaseSeconds, sentAt: now))
            case .renewal:
                guard !leaving, let id = leaseID else { return }
                effects.append(.keepAlive(lease: id, sentAt: now))
            case .mapRefresh, .mapRetry:
                // Also every lease time: a watch gone silent (a half-open connection, a member cut
                // off from its cluster) or a guess about a block lasts no longer.
                effects.append(.readMap)
            case .retryPaused:
                break  // `advance` runs after every event
            }
        }

        /// Logs a problem at `warning`, once a second at most: etcd down makes every call fail
        /// at once, and the retries come several times a second.
        mutating func noteProblem(_ text: String, at now: UInt64, into effects: inout [OwnershipEffect]) {
            if let last = problemLoggedAt, now &- last < 1_000_000_000 { return }
            problemLoggedAt = now
            effects.append(.log(.warning, text))
        }

        // MARK: - The map

        /// A read of the whole map: the members as read, and each block as read unless a newer
        /// change of it is known (a claim of this node's answered after the read was sent).
        mutating func take(_ values: [EtcdKeyValue], readAt revision: Int64) {
            members = [:]
            var claims = [EtcdKeyValue?](repeating: nil, count: SlotBlocks.count)
            for index in blocks.indices { blocks[index].lastClaimant = "" }
            for entry in values {
                if entry.key.hasPrefix(memberPrefix) {
                    members[String(entry.key.dropFirst(memberPrefix.count))] = entry.value
                } else if let block = blockNumber(entry.key, under: blockPrefix) {
                    claims[block] = entry
                } else if let block = blockNumber(entry.key, under: claimsPrefix) {
                    blocks[block].lastClaimant = entry.value
                }
            }
            for block in blocks.indices where revision >= blocks[block].knownRevision {
                blocks[block].knownRevision = revision
                if let claim = claims[block] { setOwner(of: block, to: claim) } else { setFree(block) }
            }
            hasRead = true
        }

        /// One change of the watch; a block's change older than what is known is dropped.
        mutating func apply(_ change: EtcdChange) {
            switch change {
            case .put(let entry):
                if entry.key.hasPrefix(memberPrefix) {
                    members[String(entry.key.dropFirst(memberPrefix.count))] = entry.value
                } else if let block = blockNumber(entry.key, under: blockPrefix) {
                    if takeChange(of: block, at: entry.revision) { setOwner(of: block, to: entry) }
                } else if let block = blockNumber(entry.key, under: claimsPrefix) {
                    blocks[block].lastClaimant = entry.value
                }
            case .delete(let key, let revision):
                if key.hasPrefix(memberPrefix) {
                    members[String(key.dropFirst(memberPrefix.count))] = nil
                } else if let block = blockNumber(key, under: blockPrefix) {
                    if takeChange(of: block, at: revision) { setFree(block) }
                } else if let block = blockNumber(key, under: claimsPrefix) {
                    blocks[block].lastClaimant = ""
                }
            }
        }

        /// Whether a change of `block` made at `revision` is newer than what is known; if so it
        /// is known from now on. News older than a claim this node saw answered would otherwise
        /// show the block as another node's or free, and have it emptied again.
        mutating func takeChange(of block: Int, at revision: Int64) -> Bool {
            guard revision > blocks[block].knownRevision else { return false }
            blocks[block].knownRevision = revision
            return true
        }

        /// The block a key names under `prefix`, nil for any other key.
        func blockNumber(_ key: String, under prefix: String) -> Int? {
            guard key.hasPrefix(prefix), let block = Int(key.dropFirst(prefix.count)),
                (0..<SlotBlocks.count).contains(block)
            else { return nil }
            return block
        }

        mutating func setOwner(of block: Int, to claim: EtcdKeyValue) {
            blocks[block].lease = claim.lease
            blocks[block].claimRevision = claim.revision
            // This node's id under another lease (an earlier run, or a lease that expired) is
            // not this node's claim: it goes when that lease does.
            let own = claim.value == nodeID && leaseID != nil && claim.lease == leaseID
            blocks[block].holder =
                own ? .this : claim.value == nodeID ? .anotherUnknown : .another(claim.value)
            if !own { blocks[block].served = false }
        }

        mutating func setFree(_ block: Int) {
            // Served until it went free without being given back: the lease expired, and the
            // watch said so before the renewal did.
            if blocks[block].served { blocks[block].servedBeforeLeaseLost = true }
            blocks[block].holder = .free
            blocks[block].lease = ""
            blocks[block].claimRevision = 0
            blocks[block].served = false
        }
    }

    /// One slot block as a node knows it. A value type.
    package struct BlockState: Equatable, Sendable {
        /// Who holds the block in etcd, as last read, watched or answered.
        package enum Holder: Equatable, Sendable {
            case free
            /// This node, under its current lease.
            case this
            /// Another node (by id).
            case another(String)
            /// Another node, or this id under another lease: not this node's, and not free; the
            /// watch (or the next read, within a lease time) says whose.
            case anotherUnknown
        }

        /// What is under way for the block.
        enum Pending: Equatable, Sendable {
            /// A claim sent; `knownRevision` when it was (a failure with no news since means
            /// another node holds it). `back`: a claim back of a block served before the lease
            /// was lost, kept with what it holds.
            case claim(back: Bool, knownBefore: Int64)
            /// To be given back once the server has taken view `afterView` (which no longer
            /// serves it); `sent` once the release is.
            case release(afterView: UInt64, sent: Bool)
            /// Being emptied by the server.
            case emptying
        }

        package internal(set) var holder = Holder.free
        /// The lease the block is bound to in etcd ("" when free).
        package internal(set) var lease = ""
        /// The revision of the claim as last read or watched (0: free). A later owner's claim
        /// has a larger one: the block's part of the fencing token.
        package internal(set) var claimRevision: Int64 = 0
        /// The revision of the latest change taken in.
        package internal(set) var knownRevision: Int64 = 0
        /// `claims/<n>`: who claimed it last and did not give it back ("" for nobody).
        package internal(set) var lastClaimant = ""
        /// The claim revision under which this node last emptied and served it: while the claim
        /// is that same one, nobody else can have owned it, so it is served again unemptied.
        var emptiedUnder: Int64 = -1
        /// This node serves it (in the views it hands out).
        package internal(set) var served = false
        /// Served when the lease was lost: claimed back first after registering again.
        package internal(set) var servedBeforeLeaseLost = false
        var pending: Pending?
    }

    /// What happens to a node's ownership: answers from etcd (with what the call carried), a
    /// watch's changes, timers, the server's word. A value type; any thread.
    package enum OwnershipEvent: Sendable, Equatable {
        case start
        case timerFired(OwnershipTimer)
        case leaseGranted(id: String, ttl: Int, sentAt: UInt64)
        case leaseGrantFailed(String)
        case registrationAnswered(grant: String, succeeded: Bool)
        case registrationFailed(grant: String, String)
        /// Who holds `members/<id>` after a registration was refused.
        case holderRead(grant: String, holder: EtcdKeyValue?)
        case holderReadFailed(grant: String, String)
        case renewalAnswered(lease: String, ttlLeft: Int, sentAt: UInt64)
        case renewalFailed(lease: String, String)
        case mapRead(revision: Int64, values: [EtcdKeyValue])
        case mapReadFailed(String)
        case watched(number: UInt64, [EtcdChange])
        case watchEnded(number: UInt64, String)
        case claimAnswered(block: Int, lease: String, EtcdTransactionResult)
        case claimFailed(block: Int, String)
        case releaseAnswered(block: Int, EtcdTransactionResult)
        case releaseFailed(block: Int, String)
        /// The server emptied `blocks` (or could not: they must not be served).
        case emptied(blocks: [Int], succeeded: Bool)
        /// The server serves view `number` (or a later one) now.
        case published(number: UInt64)
        /// SIGTERM: hand the blocks over.
        case leave
    }

    /// The machine's timers. Setting one again replaces it.
    package enum OwnershipTimer: Sendable, Equatable, Hashable {
        case grantLease, renewal, mapRefresh, mapRetry, retryPaused
    }

    /// What the machine asks for. Calls to etcd are answered with the matching event.
    package enum OwnershipEffect: Sendable, Equatable {
        case grantLease(seconds: Int, sentAt: UInt64)
        /// Create `members/<id>` on `grant` if absent.
        case register(grant: String)
        /// Read `members/<id>`: who holds it.
        case readHolder(grant: String)
        case keepAlive(lease: String, sentAt: UInt64)
        /// No answer wanted.
        case revoke(lease: String)
        case readMap
        /// Replace the watch with watch `number`, from after `revision`.
        case watch(number: UInt64, after: Int64)
        case claim(block: Int, lease: String, ifLastClaimant: String?)
        /// Give block `block` back, if etcd still holds it for this node on `lease`.
        case release(block: Int, lease: String)
        /// Empty the server's keys in `blocks`.
        case empty(blocks: [Int])
        /// Serve `view`; answered with `.published(number)` once the server does.
        case publish(OwnershipView, number: UInt64)
        case schedule(OwnershipTimer, afterNanoseconds: UInt64)
        case log(Logger.Level, String)
    }

    /// The cluster as a node serves it: the members, each block as served, and the fence. A
    /// value type.
    package struct OwnershipView: Sendable, Equatable {
        /// One block: its owner (this node only where it serves it; nil for none known), and
        /// where this node serves it, its claim revision (0 elsewhere).
        package struct Block: Sendable, Equatable {
            package var owner: String?
            package var claimRevision: Int64 = 0
        }

        package var members: [String: String]
        package var blocks: [Block]
        package var servingUntil: UInt64
    }
#endif
