#if Etcd
    import Logging

    /// Slot ownership on etcd for one node (`taskid serve --etcd`): the node registers itself
    /// under a lease, claims its share of the slot blocks by compare-and-swap, watches the map,
    /// and serves a block only while it owns it and its lease is certainly alive.
    ///
    /// Keys, under `settings.prefix`:
    /// - `members/<id>` = `host:port`, bound to the node's lease: the node is alive;
    /// - `blocks/<n>` = `<id>`, bound to the owner's lease: block n (`SlotBlocks`) is the
    ///   owner's. A lease that expires (the node died, hung or lost etcd) takes its keys with
    ///   it, and the survivors claim the blocks.
    ///
    /// What the server serves is published with `publish`: the members, each block's owner
    /// (this node's only once `dropKeys` emptied them), and the fence (`LeaseFence`). An actor:
    /// its loops (the lease, the watch, the claim-and-release passes) run as child tasks of
    /// `run()`.
    package actor EtcdOwnership {
        let settings: EtcdSettings
        /// This node: its id and the address clients are sent to.
        package nonisolated let myself: ClusterNode
        let client: EtcdClient
        let logger: Logger
        /// Hands the server the cluster it serves now, with its number in the order of the
        /// views (the server keeps the latest: two hand-overs in flight may land in either
        /// order). Returns once the server serves it, or a later one. Any task.
        let publish: @Sendable (ClusterConfiguration, UInt64) async -> Void
        /// The number of the last view handed to `publish`.
        var viewNumber: UInt64 = 0
        /// Empties blocks this node has just gained; false when it could not, and they must
        /// not be served. Any task.
        let dropKeys: @Sendable ([Int]) async -> Bool

        var members: [String: String] = [:]
        var blocks = SlotBlocks()
        /// The blocks this node has emptied and serves.
        var served: Set<Int> = []
        var lease: String?
        /// A lease granted whose registration has not succeeded yet.
        var unusedGrant: String?
        var fence = LeaseFence(ttlNanoseconds: 3_000_000_000, marginNanoseconds: 1_000_000_000)
        /// The map has been read at least once: until then the node claims nothing.
        var hasRead = false
        /// Each block's lease in etcd ("" when free), as last read or watched.
        var blockLeases = [String](repeating: "", count: SlotBlocks.count)
        /// The revision of the latest change taken in for each block: older news is dropped, and
        /// a guess made across a wait is dropped if the map brought news of the block meanwhile.
        private var revisions = BlockRevisions()
        /// The revision that created each block's claim as last read or watched (0: free).
        private var claimRevisions = [Int64](repeating: 0, count: SlotBlocks.count)
        /// The claim revision under which this node last emptied and served each block: while
        /// the claim is that same one, nobody else can have owned the block, so a block taken
        /// out of service (a release that failed) is served again without being emptied.
        private var emptiedUnder = [Int64](repeating: -1, count: SlotBlocks.count)
        /// Requests for a claim-and-release pass, coalesced: at most one waits while one runs.
        private let passRequests: AsyncStream<Void>
        private let passRequester: AsyncStream<Void>.Continuation
        /// Handing over (SIGTERM): claim nothing more.
        var leaving = false
        /// This process among every run of this node's id: a claim records "<id> <incarnation>"
        /// as the block's claimant (`claims/<n>`), so that a sticky claim cannot mistake what an
        /// earlier run of the id stored for its own.
        let claimant: String
        /// Each block's claimant as etcd last said (`claims/<n>`, "" for none): who claimed it
        /// last and did not give it back. It outlives the claim when a lease expires.
        var lastClaimants = [String](repeating: "", count: SlotBlocks.count)
        /// The blocks served when the lease was lost: the next registration claims them first,
        /// keeping what they hold if nobody claimed them meanwhile (`rebalanceOnce`).
        var formerlyServed: Set<Int> = []
        /// After registering again past a lost lease, until this time (`MonotonicClock`), blocks
        /// whose last claimant is another node are left to it: an etcd stall past the lease
        /// expires every node's lease at once, and each comes back for its own blocks.
        var othersBlocksWaitUntil: UInt64 = 0
        /// Registered on etcd at least once: its id was free then, so a later refusal of the id
        /// is a node that took it since, not one that was there first.
        var registeredOnce = false
        /// The address of the node that holds this node's id, when registering found it taken
        /// at start (and `--wait-for-id` was not given): the server then refuses to start.
        var idTakenBy: String?
        /// Why the node does not serve its share yet, as last found (for `readiness`).
        var waitingReason = "registering on etcd"
        /// The blocks this node serves in the latest view the server took (`publishView`), and
        /// that view's number.
        var publishedServed: Set<Int> = []
        var publishedNumber: UInt64 = 0
        /// When `noteProblem` last logged (`MonotonicClock`), and what.
        var problemLoggedAt: UInt64 = 0

        package init(
            settings: EtcdSettings, myself: ClusterNode, client: EtcdClient, logger: Logger,
            publish: @escaping @Sendable (ClusterConfiguration, UInt64) async -> Void,
            dropKeys: @escaping @Sendable ([Int]) async -> Bool
        ) {
            self.settings = settings
            self.myself = myself
            self.client = client
            self.logger = logger
            self.publish = publish
            self.dropKeys = dropKeys
            claimant = "\(myself.id) \(String(UInt64.random(in: 0...UInt64.max), radix: 16))"
            (passRequests, passRequester) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        /// The owner of a block another node claimed first, until the watch says which node.
        static let claimedElsewhere = "\u{0}claimed"

        var memberPrefix: String { settings.prefix + "members/" }
        private var blockPrefix: String { settings.prefix + "blocks/" }
        private var claimsPrefix: String { settings.prefix + "claims/" }

        /// Keeps the lease and follows the map until the task is cancelled.
        package func run() async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.keepLease() }
                group.addTask { await self.followMap() }
                group.addTask { for await _ in self.passRequests { await self.rebalanceOnce() } }
                await group.waitForAll()
            }
        }

        // MARK: - The map

        /// Reads the map, then follows it with a watch; reads it again whenever the watch ends
        /// (etcd restarted, the connection dropped) and at least every lease time, so that a
        /// watch that went silent (a half-open connection, a member cut off from its cluster)
        /// or a guess this node made about a block (`claimedElsewhere`) lasts no longer.
        private func followMap() async {
            while !Task.isCancelled {
                do {
                    let read = try await client.read(prefix: settings.prefix)
                    take(read)
                    rebalance()
                    let changes = try await client.watch(prefix: settings.prefix, after: read.revision)
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await batch in changes { await self.follow(batch) }
                        }
                        group.addTask { try await Task.sleep(for: .seconds(self.settings.leaseSeconds)) }
                        try await group.next()  // the watch ended, or it is time to read again
                        group.cancelAll()
                    }
                } catch is CancellationError {
                    return
                } catch {
                    if Task.isCancelled { return }
                    noteProblem("etcd: watch ended (\(error)); reading the map again")
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
        }

        /// One batch of the watch's changes.
        private func follow(_ batch: [EtcdClient.Change]) {
            for change in batch { apply(change) }
            rebalance()
        }

        /// A read of the whole map: the members as read, and each block as read unless a newer
        /// change of it is known (a claim of this node's answered after the read was).
        private func take(_ read: (revision: Int64, values: [EtcdClient.KeyValue])) {
            members = [:]
            lastClaimants = Array(repeating: "", count: SlotBlocks.count)
            var claims = [EtcdClient.KeyValue?](repeating: nil, count: SlotBlocks.count)
            for entry in read.values {
                if entry.key.hasPrefix(memberPrefix) {
                    members[String(entry.key.dropFirst(memberPrefix.count))] = entry.value
                } else if let block = blockNumber(entry.key) {
                    claims[block] = entry
                } else if let block = blockNumber(entry.key, under: claimsPrefix) {
                    lastClaimants[block] = entry.value
                }
            }
            for block in 0..<SlotBlocks.count where revisions.takeRead(of: block, at: read.revision) {
                if let claim = claims[block] { setOwner(of: block, to: claim) } else { setFree(block) }
            }
            hasRead = true
        }

        private func apply(_ change: EtcdClient.Change) {
            switch change {
            case .put(let entry):
                if entry.key.hasPrefix(memberPrefix) {
                    members[String(entry.key.dropFirst(memberPrefix.count))] = entry.value
                } else if let block = blockNumber(entry.key), revisions.takeChange(of: block, at: entry.revision) {
                    setOwner(of: block, to: entry)
                } else if let block = blockNumber(entry.key, under: claimsPrefix) {
                    lastClaimants[block] = entry.value
                }
            case .delete(let key, let revision):
                if key.hasPrefix(memberPrefix) {
                    members[String(key.dropFirst(memberPrefix.count))] = nil
                } else if let block = blockNumber(key), revisions.takeChange(of: block, at: revision) {
                    setFree(block)
                } else if let block = blockNumber(key, under: claimsPrefix) {
                    lastClaimants[block] = ""
                }
            }
        }

        /// The block a key of the map names (under `blocks/`, or `prefix`), nil for any other key.
        private func blockNumber(_ key: String, under prefix: String? = nil) -> Int? {
            let prefix = prefix ?? blockPrefix
            guard key.hasPrefix(prefix), let block = Int(key.dropFirst(prefix.count)),
                (0..<SlotBlocks.count).contains(block)
            else { return nil }
            return block
        }

        private func setOwner(of block: Int, to claim: EtcdClient.KeyValue) {
            blockLeases[block] = claim.lease
            claimRevisions[block] = claim.revision
            // This node's id under another lease (an earlier run of this node, or a lease that
            // expired) is not this node's claim: it goes when that lease does.
            let ownClaim = claim.value == myself.id && claim.lease == lease
            blocks.owners[block] = claim.value == myself.id && !ownClaim ? Self.claimedElsewhere : claim.value
            if !ownClaim { served.remove(block) }
        }

        private func setFree(_ block: Int) {
            // Served until it went free without being given back (given back, it is no longer
            // served first): the lease expired, and the watch said so before the renewal did.
            if served.contains(block) { formerlyServed.insert(block) }
            blockLeases[block] = ""
            claimRevisions[block] = 0
            blocks.owners[block] = nil
            served.remove(block)
        }

        // MARK: - Claims and releases

        /// Asks for a pass that moves this node toward its share (`rebalanceOnce`). Passes run
        /// one at a time in `run()`'s own task, never in the caller's: the watch's task is
        /// cancelled every lease time to read the map again, and a pass cut short there failed
        /// each of its remaining claims and releases. A request made during a pass runs one more.
        func rebalance() {
            passRequester.yield()
        }

        /// Gives back blocks over this node's share (serving them no more first), claims free
        /// ones under it (emptying them before serving them), then publishes what it serves.
        private func rebalanceOnce() async {
            guard hasRead, !leaving, let lease, fence.allowsServing(at: MonotonicClock.nanoseconds()),
                members[myself.id] != nil
            else { return await publishView() }
            await claimFormerBlocks(lease: lease)
            guard !leaving, self.lease == lease else { return }
            // Registered again past a lost lease: other nodes' blocks are theirs to come back for.
            let waiting = MonotonicClock.nanoseconds() < othersBlocksWaitUntil
            let othersBlocks = Set(
                (0..<SlotBlocks.count).filter { waiting && !lastClaimants[$0].isEmpty && !isMine(lastClaimants[$0]) })
            // Its own former blocks are not claimed the usual way (emptied) while they may come back.
            let plan = blocks.plan(
                for: myself.id, among: Array(members.keys), leaving: othersBlocks.union(formerlyServed))
            logger.debug(
                "etcd: rebalancing",
                metadata: [
                    "members": "\(members.count)", "owned": "\(blocks.blocks(of: myself.id).count)",
                    "claim": "\(plan.claim.count)", "release": "\(plan.release.count)",
                ])
            if !plan.release.isEmpty {
                for block in plan.release { served.remove(block) }
                await publishView()  // no longer served here, before anyone can claim them
                for block in plan.release {
                    let knownBefore = revisions.known[block]
                    do {
                        // Free now, in this node's view too: the watch's word on it comes later, and
                        // a plan made meanwhile must not give it back again.
                        let release = try await client.release(
                            blockPrefix + "\(block)", value: myself.id, claimsKey: claimsPrefix + "\(block)")
                        if release.succeeded, revisions.takeChange(of: block, at: release.revision) {
                            setFree(block)
                        }
                    } catch {
                        // Given back or not: unknown until the next read. Not this node's meanwhile.
                        if revisions.known[block] == knownBefore { blocks.owners[block] = Self.claimedElsewhere }
                        logger.warning("etcd: could not give back block \(block): \(error)")
                    }
                }
            }
            // Blocks etcd says are this node's, under its current lease, that it does not
            // serve: a claim whose answer was lost (etcd took it, the reply timed out), or a
            // release that failed. One still under the claim it was emptied under is intact.
            var gained: [Int] = []
            for block in blocks.blocks(of: myself.id)
            where !served.contains(block) && !plan.release.contains(block) && blockLeases[block] == lease {
                if claimRevisions[block] > 0 && claimRevisions[block] == emptiedUnder[block] {
                    served.insert(block)
                } else {
                    gained.append(block)
                }
            }
            for block in plan.claim {
                let knownBefore = revisions.known[block]
                do {
                    let claim = try await client.claim(
                        blockPrefix + "\(block)", value: myself.id, lease: lease, claimsKey: claimsPrefix + "\(block)",
                        claimant: claimant)
                    guard !leaving, self.lease == lease else { return }  // left, or the lease was lost
                    if claim.succeeded {
                        // Unless the watch has already brought this claim, or a later change.
                        if revisions.takeChange(of: block, at: claim.revision) {
                            setOwner(
                                of: block, to: .init(key: "", value: myself.id, lease: lease, revision: claim.revision))
                        }
                        if blocks.owners[block] == myself.id && blockLeases[block] == lease { gained.append(block) }
                    } else if revisions.known[block] == knownBefore && blocks.owners[block] == nil {
                        // Another node's, which the watch will name: not claimed again meanwhile
                        // (and read again within a lease time, if the watch never says).
                        blocks.owners[block] = Self.claimedElsewhere
                    }
                } catch {
                    logger.warning("etcd: could not claim block \(block): \(error)")
                }
            }
            if !gained.isEmpty {
                // What this node stored when it last owned these blocks is not served again.
                // Not emptied: owned but not served, so the next pass tries again.
                let emptied = await dropKeys(gained)
                guard !leaving, self.lease == lease else { return }
                guard emptied else { return await publishView() }
                for block in gained where blocks.owners[block] == myself.id && blockLeases[block] == lease {
                    served.insert(block)
                    emptiedUnder[block] = claimRevisions[block]
                }
                logger.info("etcd: serving \(gained.count) more slot blocks (\(served.count) in all)")
            }
            await publishView()
        }

        /// Whether a claimant (`claims/<n>`) is this node's id, in this run or an earlier one.
        private func isMine(_ claimant: String) -> Bool { claimant.hasPrefix(myself.id + " ") }

        /// After registering again past a lost lease: claims back, up to its share, the blocks it
        /// served when the lease was lost, each once etcd shows it free and only if this run is
        /// still its last claimant (nobody claimed it meanwhile, and it was not given back). Such
        /// a block keeps what it holds: while the lease was gone the fence kept the node from
        /// answering for it, and nobody else did. A block still under the old lease (etcd has not
        /// deleted it yet) is tried again at the next pass; one claimed or given back since is
        /// claimed the usual way, emptied. After a lease, whatever is left goes the usual way.
        private func claimFormerBlocks(lease: String) async {
            guard !formerlyServed.isEmpty else { return }
            guard MonotonicClock.nanoseconds() < othersBlocksWaitUntil else {
                formerlyServed = []
                return
            }
            formerlyServed = formerlyServed.filter {
                lastClaimants[$0] == claimant && [nil, Self.claimedElsewhere].contains(blocks.owners[$0])
            }
            let share = SlotBlocks.share(of: myself.id, among: Array(members.keys))
            let room = max(0, share - blocks.blocks(of: myself.id).count)
            var kept = 0
            for block in formerlyServed.sorted().filter({ blocks.owners[$0] == nil }).prefix(room) {
                do {
                    let claim = try await client.claim(
                        blockPrefix + "\(block)", value: myself.id, lease: lease, claimsKey: claimsPrefix + "\(block)",
                        claimant: claimant, ifLastClaimant: claimant)
                    guard !leaving, self.lease == lease else { return }
                    guard claim.succeeded else { continue }  // the watch says why; the next pass sees it
                    formerlyServed.remove(block)
                    if revisions.takeChange(of: block, at: claim.revision) {
                        setOwner(
                            of: block, to: .init(key: "", value: myself.id, lease: lease, revision: claim.revision))
                    }
                    guard blocks.owners[block] == myself.id && blockLeases[block] == lease else { continue }
                    served.insert(block)
                    emptiedUnder[block] = claimRevisions[block]
                    kept += 1
                } catch {
                    logger.warning("etcd: could not claim back block \(block): \(error)")
                }
            }
            guard kept > 0 else { return }
            logger.info(
                "etcd: claimed back \(kept) slot blocks it served, with what they hold (\(formerlyServed.count) to go)")
            await publishView()
        }

        /// The cluster as this node serves it now, to the server.
        func publishView() async {
            let list = members.compactMap { id, address -> (id: String, host: String, port: Int)? in
                guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...])
                else {
                    return nil
                }
                return (id, String(address[..<colon]), port)
            }
            var owners = blocks.owners
            for (block, owner) in owners.enumerated() where owner == myself.id && !served.contains(block) {
                owners[block] = nil
            }
            viewNumber += 1
            let number = viewNumber
            let serving = Set(owners.indices.filter { owners[$0] == myself.id })
            await publish(
                ClusterConfiguration(
                    members: list, blockOwners: owners, myself: myself, servingUntil: fence.validUntil),
                number)
            // Views handed over concurrently land in either order; the server keeps the latest.
            if number > publishedNumber {
                publishedNumber = number
                publishedServed = serving
            }
        }
    }
#endif
