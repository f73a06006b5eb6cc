#if Etcd
    // The lease and the registration: granting, registering under this node's id (one node per
    // id), renewing, losing it, handing over at SIGTERM, and whether the node serves its share.
    extension OwnershipMachine {
        /// Whether the node serves its share of the slot blocks (all of them, alone), or what it
        /// waits for.
        package enum Readiness: Equatable, Sendable {
            case ready
            case waiting(String)
            /// Another live node holds this node's id (its address): the node must not start.
            case idTaken(by: String)
        }

        /// Whether the node serves its share at `now`: registered under a confirmed lease, the
        /// map read, exactly its share owned, and every block of it in the view the server took.
        package func readiness(at now: UInt64) -> Readiness {
            if let idTakenBy { return .idTaken(by: idTakenBy) }
            guard let id = leaseID, hasRead, members[nodeID] != nil else { return .waiting(waitingReason) }
            guard fence.allowsServing(at: now) else { return .waiting("lease \(id) not confirmed by etcd yet") }
            let share = SlotBlocks.share(of: nodeID, among: Array(members.keys))
            let mine = blocks.indices.filter { blocks[$0].holder == .this }
            guard mine.count == share, mine.allSatisfy(publishedServed.contains) else {
                return .waiting(
                    "claiming its share of the slot blocks: serving \(mine.filter(publishedServed.contains).count) "
                        + "of \(share) among \(members.count) nodes")
            }
            return .ready
        }

        /// Whether the lease was confirmed at least once: etcd answered as etcd.
        package var hasRegistered: Bool { registeredOnce }

        /// After `leave`: whether every block the node owned then is another node's, as the map
        /// names it (a guess has no address for `-MOVED`). True at once when it knew no other node.
        package var handedOver: Bool {
            guard members.keys.contains(where: { $0 != nodeID }) else { return true }
            return handedOverBlocks.allSatisfy {
                if case .another = blocks[$0].holder { return true }
                return false
            }
        }

        mutating func handleLeaseEvent(_ event: OwnershipEvent, at now: UInt64, into effects: inout [OwnershipEffect]) {
            switch event {
            case .leaseGranted(let id, let ttl, let sentAt):
                guard !leaving, lease == .granting else {
                    // Granted as the node began to leave: nothing would renew or revoke it.
                    effects.append(.revoke(lease: id))
                    return
                }
                lease = .registering(grant: id, ttl: ttl, sentAt: sentAt)
                effects.append(.register(grant: id))
            case .leaseGrantFailed(let reason):
                retryLease(reason, revoking: nil, at: now, into: &effects)
            case .registrationAnswered(let grant, let succeeded):
                guard case .registering(grant, let ttl, let sentAt) = lease else { return }
                if succeeded {
                    registered(grant, ttl: ttl, sentAt: sentAt, at: now, into: &effects)
                } else {
                    effects.append(.readHolder(grant: grant))
                }
            case .registrationFailed(let grant, let reason), .holderReadFailed(let grant, let reason):
                guard case .registering(grant, _, _) = lease else { return }
                // Its member key may have been written: it goes now, not when it expires.
                retryLease(reason, revoking: grant, at: now, into: &effects)
            case .holderRead(let grant, let holder):
                guard case .registering(grant, let ttl, let sentAt) = lease else { return }
                idHeld(by: holder, grant: grant, ttl: ttl, sentAt: sentAt, at: now, into: &effects)
            case .renewalAnswered(let id, let left, let sentAt):
                guard !leaving, leaseID == id else { return }  // this answer reopens nothing
                guard left > 0 else { return leaseExpired(at: now, into: &effects) }
                fence.renewed(sentAt: sentAt)
                // A claim, release or emptying that failed is tried again from here.
                pausedUntil = 0
                let servingFor = fence.validUntil > now ? (fence.validUntil - now) / 1_000_000 : 0
                effects += [
                    .log(
                        .debug,
                        "etcd: lease \(id) renewed (ttl left \(left) s, round trip \((now &- sentAt) / 1_000_000) ms, "
                            + "serving for \(servingFor) ms)"),
                    .schedule(.renewal, afterNanoseconds: renewalDelay(at: now)),
                ]
            case .renewalFailed(let id, let reason):
                guard !leaving, leaseID == id else { return }
                effects += [
                    .log(.warning, "etcd: keep-alive failed (\(reason)); serving until the fence closes"),
                    .schedule(.renewal, afterNanoseconds: leaseNanoseconds / 4),
                ]
            default:
                break
            }
        }

        /// When to renew next: every fourth of the lease, or sooner when the fence would close
        /// before three more tries (a grant answered long after it was sent, as when etcd was
        /// stalled: the fence counts from the sending).
        func renewalDelay(at now: UInt64) -> UInt64 {
            let left = fence.validUntil > now ? fence.validUntil - now : 0
            return min(leaseNanoseconds / 4, left / 3)
        }

        /// A lease call failed: say why, give back the grant not registered, and grant again soon.
        private mutating func retryLease(
            _ reason: String, revoking grant: String?, at now: UInt64, into effects: inout [OwnershipEffect]
        ) {
            waitingReason = reason
            noteProblem("etcd: \(reason); trying again", at: now, into: &effects)
            if let grant { effects.append(.revoke(lease: grant)) }
            lease = .none
            effects.append(.schedule(.grantLease, afterNanoseconds: 200_000_000))
        }

        /// `members/<id>` is this node's, on `grant`: the lease is held from here on.
        private mutating func registered(
            _ grant: String, ttl: Int, sentAt: UInt64, at now: UInt64, into effects: inout [OwnershipEffect]
        ) {
            let ttlNanoseconds = UInt64(ttl) * 1_000_000_000
            // A fifth of the lease covers the two clocks' rates; renewing every fourth leaves
            // three renewals to fail before the fence closes.
            fence = LeaseFence(ttlNanoseconds: ttlNanoseconds, marginNanoseconds: ttlNanoseconds / 5)
            fence.renewed(sentAt: sentAt)
            lease = .held(id: grant, ttl: ttl)
            if registeredOnce { othersBlocksWaitUntil = now &+ ttlNanoseconds }
            registeredOnce = true
            waitingReason = "claiming its share of the slot blocks"
            effects += [
                .log(.info, "etcd: registered with lease \(grant) (\(ttl) s)"),
                .schedule(.renewal, afterNanoseconds: renewalDelay(at: now)),
            ]
        }

        /// The registration was refused: `members/<id>` exists. At start, a second node under one
        /// id refuses to start, unless told to wait for the id (`--wait-for-id`: a node restarted
        /// at once after a crash waits for its old lease to expire). After it had registered,
        /// another node took the id while this one's lease was gone: it serves nothing and tries
        /// again every fourth of the lease.
        private mutating func idHeld(
            by holder: EtcdKeyValue?, grant: String, ttl: Int, sentAt: UInt64, at now: UInt64,
            into effects: inout [OwnershipEffect]
        ) {
            // The create was applied but its answer lost (a time-out, then another endpoint's
            // "exists"): the key is this node's after all.
            if holder?.lease == grant { return registered(grant, ttl: ttl, sentAt: sentAt, at: now, into: &effects) }
            effects.append(.revoke(lease: grant))
            lease = .none
            guard let holder else {
                // Gone meanwhile (its lease just expired): try again at once.
                lease = .granting
                return effects.append(.grantLease(seconds: leaseSeconds, sentAt: now))
            }
            if holder.value == address {
                // This node's own earlier try (a lost answer, then a revoke that failed): no other
                // node can listen on this address. Its lease goes now, and the next try registers.
                lease = .granting
                return effects += [.revoke(lease: holder.lease), .grantLease(seconds: leaseSeconds, sentAt: now)]
            }
            if !registeredOnce && !waitForID {
                idTakenBy = holder.value
                lease = .refused
                return effects.append(
                    .log(
                        .error, "etcd: node id '\(nodeID)' is already registered by \(holder.value) under a live lease")
                )
            }
            waitingReason =
                "node id '\(nodeID)' is registered by \(holder.value) under a live lease; waiting for it to go"
            noteProblem("etcd: \(waitingReason)", at: now, into: &effects)
            effects.append(.schedule(.grantLease, afterNanoseconds: 250_000_000 * UInt64(leaseSeconds)))
        }

        /// The renewal found the lease expired: etcd deleted this node's keys. It serves nothing
        /// until registered again, and then claims back first what it served, with what it holds.
        private mutating func leaseExpired(at now: UInt64, into effects: inout [OwnershipEffect]) {
            effects.append(.log(.warning, "etcd: the lease expired; its blocks are gone, registering again"))
            lease = .granting
            fence.revoked()
            for block in blocks.indices {
                if blocks[block].served { blocks[block].servedBeforeLeaseLost = true }
                blocks[block].served = false
                // Its keys went with the lease, whatever the watch has said so far.
                if blocks[block].holder == .this {
                    blocks[block].holder = .free
                    blocks[block].lease = ""
                }
            }
            effects.append(.grantLease(seconds: leaseSeconds, sentAt: now))
        }

        /// SIGTERM: serves nothing from here on, and revokes the lease, which deletes this node's
        /// keys at once so that the others claim its blocks without waiting for it to expire.
        mutating func leave(into effects: inout [OwnershipEffect]) {
            guard !leaving else { return }
            leaving = true
            handedOverBlocks = blocks.indices.filter { blocks[$0].holder == .this }
            // Revoked once the server serves nothing of it (`advance`): a block claimed by another
            // node must not still be served here.
            switch lease {
            case .held(let id, _), .registering(let id, _, _): leaseToRevoke = id
            default: break
            }
            lease = .none
            fence.revoked()
            for block in blocks.indices { blocks[block].served = false }
        }
    }
#endif
