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
    actor EtcdOwnership {
        let settings: EtcdSettings
        /// This node: its id and the address clients are sent to.
        let myself: ClusterNode
        let client: EtcdClient
        let logger: Logger
        /// Hands the server the cluster it serves now, with its number in the order of the
        /// views (the server keeps the latest: two hand-overs in flight may land in either
        /// order). Returns once the server serves it, or a later one. Any task.
        let publish: @Sendable (ClusterConfiguration, UInt64) async -> Void
        /// The number of the last view handed to `publish`.
        private var viewNumber: UInt64 = 0
        /// Empties blocks this node has just gained; false when it could not, and they must
        /// not be served. Any task.
        let dropKeys: @Sendable ([Int]) async -> Bool

        private var members: [String: String] = [:]
        private var blocks = SlotBlocks()
        /// The blocks this node has emptied and serves.
        private var served: Set<Int> = []
        private var lease: String?
        /// A lease granted whose registration has not succeeded yet.
        private var unusedGrant: String?
        private var fence = LeaseFence(ttlNanoseconds: 3_000_000_000, marginNanoseconds: 1_000_000_000)
        /// The map has been read at least once: until then the node claims nothing.
        private var hasRead = false
        /// Each block's lease in etcd ("" when free), as last read or watched.
        private var blockLeases = [String](repeating: "", count: SlotBlocks.count)
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
        private var leaving = false

        init(
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
            (passRequests, passRequester) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        /// The owner of a block another node claimed first, until the watch says which node.
        private static let claimedElsewhere = "\u{0}claimed"

        private var memberPrefix: String { settings.prefix + "members/" }
        private var blockPrefix: String { settings.prefix + "blocks/" }

        /// Keeps the lease and follows the map until the task is cancelled.
        func run() async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.keepLease() }
                group.addTask { await self.followMap() }
                group.addTask { for await _ in self.passRequests { await self.rebalanceOnce() } }
                await group.waitForAll()
            }
        }

        /// SIGTERM: stops serving every block, then revokes the lease, which deletes this
        /// node's keys at once so that the survivors claim its blocks without waiting for it to
        /// expire; returns once they have (or after twice the lease time, or at once when it
        /// knows no other node), so that the drain can answer `-MOVED` to the new owners.
        func handOver() async {
            // Nothing served from here on, before the lease goes: every pass and renewal checks
            // `leaving` after each of its waits, so none serves again.
            leaving = true
            let mine = blocks.blocks(of: myself.id)
            let othersKnown = members.keys.contains { $0 != myself.id }
            let leaseToRevoke = lease
            lease = nil
            fence.revoked()
            served = []
            await publishView()
            if let leaseToRevoke {
                do { try await client.revoke(leaseToRevoke) } catch {
                    logger.warning("etcd: could not revoke the lease; its blocks move when it expires: \(error)")
                }
            }
            guard othersKnown else {
                logger.info("etcd: no other node to hand \(mine.count) slot blocks over to")
                return
            }
            let deadline = MonotonicClock.nanoseconds() &+ UInt64(2 * settings.leaseSeconds) * 1_000_000_000
            while MonotonicClock.nanoseconds() < deadline, !Task.isCancelled {
                // Owned by a node the map names: a guess (`claimedElsewhere`) has no address for -MOVED.
                if mine.allSatisfy({ [nil, myself.id, Self.claimedElsewhere].contains(blocks.owners[$0]) == false }) {
                    logger.info("etcd: handed over \(mine.count) slot blocks")
                    return
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
            logger.warning("etcd: \(mine.count) slot blocks given up; not all claimed by others within twice the lease")
        }

        // MARK: - The lease

        /// Grants the lease, registers the node, and renews it every fourth of its time to
        /// live; grants a new one when it has expired. Errors are retried: the fence closes by
        /// itself while etcd cannot be reached.
        private func keepLease() async {
            while !Task.isCancelled && !leaving {
                do {
                    let sent = MonotonicClock.nanoseconds()
                    let granted = try await client.grantLease(seconds: settings.leaseSeconds)
                    unusedGrant = granted.id
                    try await client.put(
                        memberPrefix + myself.id, value: "\(myself.host):\(myself.port)", lease: granted.id)
                    guard !leaving else {
                        // Granted as the node began to leave: nothing would renew or revoke it.
                        try? await client.revoke(granted.id)
                        return
                    }
                    // Only a registered lease is this node's: no pass claims anything under one
                    // whose registration failed (it would expire with blocks served under it).
                    let ttl = UInt64(granted.ttl) * 1_000_000_000
                    // A fifth of the lease covers the two clocks' rates; renewing every fourth
                    // leaves three renewals to fail before the fence closes.
                    fence = LeaseFence(ttlNanoseconds: ttl, marginNanoseconds: ttl / 5)
                    fence.renewed(sentAt: sent)
                    lease = granted.id
                    unusedGrant = nil
                    logger.info("etcd: registered with lease \(granted.id) (\(granted.ttl) s)")
                    rebalance()
                    try await renew(granted.id, every: .nanoseconds(Int64(ttl / 4)))
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("etcd: \(error); trying again")
                    if let unusedGrant {
                        // Its member key may have been written: it goes now, not when it expires.
                        try? await client.revoke(unusedGrant)
                        self.unusedGrant = nil
                    }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
        }

        /// Renews lease `id` until it is found expired (then returns) or the task is cancelled.
        private func renew(_ id: String, every interval: Duration) async throws {
            while !leaving {
                try await Task.sleep(for: interval)
                let sent = MonotonicClock.nanoseconds()
                let left: Int
                do { left = try await client.keepAlive(id) } catch is CancellationError {
                    throw CancellationError()
                } catch {
                    logger.warning("etcd: keep-alive failed (\(error)); serving until the fence closes")
                    continue
                }
                // Leaving, or the lease replaced meanwhile: this answer reopens nothing.
                guard !leaving, lease == id else { return }
                guard left > 0 else {
                    // Expired: etcd deleted this node's keys. Serve nothing until claimed again.
                    logger.warning("etcd: the lease expired; its blocks are gone, registering again")
                    lease = nil
                    fence.revoked()
                    served = []
                    // Its keys went with the lease, whatever the watch has said so far.
                    for block in blocks.blocks(of: myself.id) {
                        blocks.owners[block] = nil
                        blockLeases[block] = ""
                    }
                    await publishView()
                    return
                }
                fence.renewed(sentAt: sent)
                let answered = MonotonicClock.nanoseconds()
                let servingFor = fence.validUntil > answered ? (fence.validUntil - answered) / 1_000_000 : 0
                // The fence's times, per renewal: what shows why a node stopped serving.
                logger.debug(
                    "etcd: lease renewed",
                    metadata: [
                        "lease": "\(id)", "ttl_left_s": "\(left)",
                        "round_trip_ms": "\((answered &- sent) / 1_000_000)", "serving_for_ms": "\(servingFor)",
                    ])
                await publishView()  // the fence moved: even while a pass is under way
                // Also the periodic pass: a pass skipped while the fence was closed, or a claim
                // that failed, is tried again here.
                rebalance()
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
                    logger.warning("etcd: watch ended (\(error)); reading the map again")
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
            var claims = [EtcdClient.KeyValue?](repeating: nil, count: SlotBlocks.count)
            for entry in read.values {
                if entry.key.hasPrefix(memberPrefix) {
                    members[String(entry.key.dropFirst(memberPrefix.count))] = entry.value
                } else if let block = blockNumber(entry.key) {
                    claims[block] = entry
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
                }
            case .delete(let key, let revision):
                if key.hasPrefix(memberPrefix) {
                    members[String(key.dropFirst(memberPrefix.count))] = nil
                } else if let block = blockNumber(key), revisions.takeChange(of: block, at: revision) {
                    setFree(block)
                }
            }
        }

        /// The block a key of the map names, nil for any other key.
        private func blockNumber(_ key: String) -> Int? {
            guard key.hasPrefix(blockPrefix), let block = Int(key.dropFirst(blockPrefix.count)),
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
        private func rebalance() {
            passRequester.yield()
        }

        /// Gives back blocks over this node's share (serving them no more first), claims free
        /// ones under it (emptying them before serving them), then publishes what it serves.
        private func rebalanceOnce() async {
            guard hasRead, !leaving, let lease, fence.allowsServing(at: MonotonicClock.nanoseconds()),
                members[myself.id] != nil
            else { return await publishView() }
            let plan = blocks.plan(for: myself.id, among: Array(members.keys))
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
                        let release = try await client.deleteIfValue(blockPrefix + "\(block)", value: myself.id)
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
                    let claim = try await client.createIfAbsent(
                        blockPrefix + "\(block)", value: myself.id, lease: lease)
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

        /// The cluster as this node serves it now, to the server.
        private func publishView() async {
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
            await publish(
                ClusterConfiguration(
                    members: list, blockOwners: owners, myself: myself, servingUntil: fence.validUntil),
                viewNumber)
        }
    }
#endif
