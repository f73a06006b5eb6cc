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
    /// its two loops (the lease, the watch) run as child tasks of `run()`.
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
        /// Empties blocks this node has just gained. Any task.
        let dropKeys: @Sendable ([Int]) async -> Void

        private var members: [String: String] = [:]
        private var blocks = SlotBlocks()
        /// The blocks this node has emptied and serves.
        private var served: Set<Int> = []
        private var lease: String?
        private var fence = LeaseFence(ttlNanoseconds: 3_000_000_000, marginNanoseconds: 1_000_000_000)
        /// The map has been read at least once: until then the node claims nothing.
        private var hasRead = false
        private var rebalancing = false
        private var rebalanceAgain = false
        /// Handing over (SIGTERM): claim nothing more.
        private var leaving = false

        init(
            settings: EtcdSettings, myself: ClusterNode, client: EtcdClient, logger: Logger,
            publish: @escaping @Sendable (ClusterConfiguration, UInt64) async -> Void,
            dropKeys: @escaping @Sendable ([Int]) async -> Void
        ) {
            self.settings = settings
            self.myself = myself
            self.client = client
            self.logger = logger
            self.publish = publish
            self.dropKeys = dropKeys
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
                await group.waitForAll()
            }
        }

        /// SIGTERM: stops serving every block, then revokes the lease, which deletes this
        /// node's keys at once so that the survivors claim its blocks without waiting for it to
        /// expire; returns once they have (or after twice the lease time), so that the drain
        /// can answer `-MOVED` to the new owners.
        func handOver() async {
            leaving = true
            let mine = blocks.blocks(of: myself.id)
            served = []
            await publishView()
            if let lease {
                do { try await client.revoke(lease) } catch {
                    logger.warning("etcd: could not revoke the lease; its blocks move when it expires: \(error)")
                }
            }
            self.lease = nil
            fence.revoked()
            let deadline = MonotonicClock.nanoseconds() &+ UInt64(2 * settings.leaseSeconds) * 1_000_000_000
            while MonotonicClock.nanoseconds() < deadline, !Task.isCancelled {
                if mine.allSatisfy({ blocks.owners[$0] != nil && blocks.owners[$0] != myself.id }) { break }
                try? await Task.sleep(for: .milliseconds(20))
            }
            logger.info("etcd: handed over \(mine.count) slot blocks")
        }

        // MARK: - The lease

        /// Grants the lease, registers the node, and renews it every third of its time to
        /// live; grants a new one when it has expired. Errors are retried: the fence closes by
        /// itself while etcd cannot be reached.
        private func keepLease() async {
            while !Task.isCancelled && !leaving {
                do {
                    let sent = MonotonicClock.nanoseconds()
                    let granted = try await client.grantLease(seconds: settings.leaseSeconds)
                    let ttl = UInt64(granted.ttl) * 1_000_000_000
                    // A fifth of the lease covers the two clocks' rates; renewing every fourth
                    // leaves three renewals to fail before the fence closes.
                    fence = LeaseFence(ttlNanoseconds: ttl, marginNanoseconds: ttl / 5)
                    fence.renewed(sentAt: sent)
                    lease = granted.id
                    try await client.put(
                        memberPrefix + myself.id, value: "\(myself.host):\(myself.port)", lease: granted.id)
                    logger.info("etcd: registered with lease \(granted.id) (\(granted.ttl) s)")
                    await rebalance()
                    try await renew(granted.id, every: .nanoseconds(Int64(ttl / 4)))
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("etcd: \(error); trying again")
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
                guard left > 0 else {
                    // Expired: etcd deleted this node's keys. Serve nothing until claimed again.
                    logger.warning("etcd: the lease expired; its blocks are gone, registering again")
                    lease = nil
                    fence.revoked()
                    served = []
                    // Its keys went with the lease, whatever the watch has said so far.
                    for block in blocks.blocks(of: myself.id) { blocks.owners[block] = nil }
                    await publishView()
                    return
                }
                fence.renewed(sentAt: sent)
                await publishView()
            }
        }

        // MARK: - The map

        /// Reads the map, then follows it with a watch; reads again whenever the watch ends
        /// (etcd restarted, the connection dropped).
        private func followMap() async {
            while !Task.isCancelled {
                do {
                    let read = try await client.read(prefix: settings.prefix)
                    members = [:]
                    blocks = SlotBlocks()
                    for entry in read.values { apply(.put(entry)) }
                    hasRead = true
                    await rebalance()
                    for try await changes in try await client.watch(prefix: settings.prefix, after: read.revision) {
                        for change in changes { apply(change) }
                        await rebalance()
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

        private func apply(_ change: EtcdClient.Change) {
            switch change {
            case .put(let entry):
                if entry.key.hasPrefix(memberPrefix) {
                    members[String(entry.key.dropFirst(memberPrefix.count))] = entry.value
                } else if entry.key.hasPrefix(blockPrefix), let block = Int(entry.key.dropFirst(blockPrefix.count)),
                    (0..<SlotBlocks.count).contains(block)
                {
                    blocks.owners[block] = entry.value
                    if entry.value != myself.id { served.remove(block) }
                }
            case .delete(let key):
                if key.hasPrefix(memberPrefix) {
                    members[String(key.dropFirst(memberPrefix.count))] = nil
                } else if key.hasPrefix(blockPrefix), let block = Int(key.dropFirst(blockPrefix.count)),
                    (0..<SlotBlocks.count).contains(block)
                {
                    blocks.owners[block] = nil
                    served.remove(block)
                }
            }
        }

        // MARK: - Claims and releases

        /// Moves this node toward its share: gives back blocks over it (serving them no more
        /// first), claims free ones under it (emptying them before serving them), then
        /// publishes what it serves. One at a time: a call during one runs it again after.
        private func rebalance() async {
            guard !rebalancing else {
                rebalanceAgain = true
                return
            }
            rebalancing = true
            defer { rebalancing = false }
            repeat {
                rebalanceAgain = false
                await rebalanceOnce()
            } while rebalanceAgain
        }

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
                    do {
                        // Free now, in this node's view too: the watch's word on it comes later, and
                        // a plan made meanwhile must not give it back again.
                        if try await client.deleteIfValue(blockPrefix + "\(block)", value: myself.id),
                            blocks.owners[block] == myself.id
                        {
                            blocks.owners[block] = nil
                        }
                    } catch {
                        logger.warning("etcd: could not give back block \(block): \(error)")
                    }
                }
            }
            // Blocks etcd says are this node's but it does not serve: a claim whose answer was
            // lost (etcd took it, the reply timed out). Taken in as if claimed now.
            var gained = blocks.blocks(of: myself.id).filter { !served.contains($0) && !plan.release.contains($0) }
            for block in plan.claim {
                do {
                    if try await client.createIfAbsent(blockPrefix + "\(block)", value: myself.id, lease: lease) {
                        blocks.owners[block] = myself.id
                        gained.append(block)
                    } else if blocks.owners[block] == nil {
                        // Another node's, which the watch will name: not claimed again meanwhile.
                        blocks.owners[block] = Self.claimedElsewhere
                    }
                } catch {
                    logger.warning("etcd: could not claim block \(block): \(error)")
                }
            }
            if !gained.isEmpty {
                // What this node stored when it last owned these blocks is not served again.
                await dropKeys(gained)
                for block in gained where blocks.owners[block] == myself.id { served.insert(block) }
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
