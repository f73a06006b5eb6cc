#if Etcd
    import Logging

    // The node's lease and its registration: granting, registering under this node's id (once
    // per id), renewing, handing over at SIGTERM, and what the node waits for before it serves
    // its share (`readiness`).
    extension EtcdOwnership {
        /// Whether the node serves its share of the slot blocks (all of them, alone), or what it
        /// waits for. Any task.
        package enum Readiness: Equatable, Sendable {
            case ready
            case waiting(String)
            /// Another live node holds this node's id (its address): the node must not start.
            case idTaken(by: String)
        }

        /// Whether the node serves its share now: registered under a confirmed lease, the map
        /// read, exactly its share of the blocks owned, and every one of them served.
        package func readiness() -> Readiness {
            if let idTakenBy { return .idTaken(by: idTakenBy) }
            guard let lease, hasRead, members[myself.id] != nil else { return .waiting(waitingReason) }
            guard fence.allowsServing(at: MonotonicClock.nanoseconds()) else {
                return .waiting("lease \(lease) not confirmed by etcd yet")
            }
            let share = SlotBlocks.share(of: myself.id, among: Array(members.keys))
            let mine = blocks.blocks(of: myself.id)
            // What the server serves: the view handed over, not the one being made.
            guard mine.count == share, mine.allSatisfy(publishedServed.contains) else {
                return .waiting(
                    "claiming its share of the slot blocks: serving \(mine.filter(publishedServed.contains).count) "
                        + "of \(share) among \(members.count) nodes")
            }
            return .ready
        }

        /// Whether the lease was confirmed at least once: etcd answered as etcd. Any task.
        package func hasRegistered() -> Bool { registeredOnce }

        /// Registering found this node's id held by a live node. At start, that is a second node
        /// under one id: it refuses to start (`idTakenBy`), unless told to wait for the id
        /// (`--wait-for-id`: a node restarted at once after a crash waits for its old lease to
        /// expire). After it had registered, another node took the id while this one's lease
        /// was gone: it serves nothing and tries again every fourth of the lease.
        ///
        /// Returns true when the member key is this node's after all, under `grant`: the create
        /// was applied, but its answer lost (a time-out, then the next endpoint's "exists").
        private func registeredAfterAll(grant: String) async throws -> Bool {
            let holder = try await client.value(of: memberPrefix + myself.id)
            if holder?.lease == grant { return true }
            try? await client.revoke(grant)
            unusedGrant = nil
            // Gone meanwhile (its lease just expired): try again at once.
            guard let holder else { return false }
            let address = holder.value
            if address == "\(myself.host):\(myself.port)" {
                // This node's own earlier try (a lost answer, then a revoke that failed): no other
                // node can listen on this address. Its lease goes now, and the next try registers.
                try? await client.revoke(holder.lease)
                return false
            }
            if !registeredOnce && !settings.waitForID {
                idTakenBy = address
                logger.error("etcd: node id '\(myself.id)' is already registered by \(address) under a live lease")
                return false
            }
            waitingReason =
                "node id '\(myself.id)' is registered by \(address) under a live lease; waiting for it to go"
            noteProblem("etcd: \(waitingReason)")
            try await Task.sleep(for: .milliseconds(250 * settings.leaseSeconds))
            return false
        }

        /// Logs a problem at `warning`, once a second at most: etcd down makes every call fail
        /// at once, and the retries come several times a second.
        func noteProblem(_ text: String) {
            let now = MonotonicClock.nanoseconds()
            guard problemLoggedAt == 0 || now &- problemLoggedAt >= 1_000_000_000 else { return }
            problemLoggedAt = now
            logger.warning("\(text)")
        }

        /// SIGTERM: stops serving every block, then revokes the lease, which deletes this
        /// node's keys at once so that the survivors claim its blocks without waiting for it to
        /// expire; returns once they have (or after twice the lease time, or at once when it
        /// knows no other node), so that the drain can answer `-MOVED` to the new owners.
        package func handOver() async {
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
        func keepLease() async {
            while !Task.isCancelled && !leaving {
                do {
                    let sent = MonotonicClock.nanoseconds()
                    let granted = try await client.grantLease(seconds: settings.leaseSeconds)
                    unusedGrant = granted.id
                    // Only where no live node holds this id: two nodes under one id would send
                    // each other's clients to the wrong address.
                    let registration = try await client.createIfAbsent(
                        memberPrefix + myself.id, value: "\(myself.host):\(myself.port)", lease: granted.id)
                    if !registration.succeeded, try await !registeredAfterAll(grant: granted.id) {
                        if idTakenBy != nil { return }
                        continue
                    }
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
                    if registeredOnce {
                        othersBlocksWaitUntil = MonotonicClock.nanoseconds() &+ ttl
                    }
                    registeredOnce = true
                    waitingReason = "claiming its share of the slot blocks"
                    logger.info("etcd: registered with lease \(granted.id) (\(granted.ttl) s)")
                    rebalance()
                    try await renew(granted.id, every: .nanoseconds(Int64(ttl / 4)))
                } catch is CancellationError {
                    return
                } catch {
                    waitingReason = "\(error)"
                    noteProblem("etcd: \(error); trying again")
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
                    // Claimed back first when it registers again, with what they hold.
                    formerlyServed.formUnion(served)
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

    }
#endif
