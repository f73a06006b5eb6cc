#if Etcd
    // Claims, releases and what is served: after every event the node moves toward its fair
    // share (`advance`), and the answers to its claims and releases come back here.
    extension OwnershipMachine {
        mutating func handleClaimEvent(_ event: OwnershipEvent, at now: UInt64, into effects: inout [OwnershipEffect]) {
            switch event {
            case .claimAnswered(let block, let claimLease, let result):
                guard case .claim(let back, let knownBefore) = blocks[block].pending else { return }
                blocks[block].pending = nil
                guard !leaving, leaseID == claimLease else { return }  // left, or the lease was lost
                guard result.succeeded else {
                    // Another node's, which the watch will name: not claimed again meanwhile (and
                    // read again within a lease time, if the watch never says).
                    if blocks[block].knownRevision == knownBefore && blocks[block].holder == .free {
                        blocks[block].holder = .anotherUnknown
                    }
                    return
                }
                // Unless the watch has already brought this claim, or a later change.
                if takeChange(of: block, at: result.revision) {
                    setOwner(
                        of: block,
                        to: EtcdKeyValue(key: "", value: nodeID, lease: claimLease, revision: result.revision))
                }
                guard back, blocks[block].holder == .this, blocks[block].lease == claimLease else { return }
                // Claimed back with what it holds: nobody claimed it since this process did.
                blocks[block].servedBeforeLeaseLost = false
                blocks[block].served = true
                blocks[block].emptiedUnder = blocks[block].claimRevision
                effects.append(.log(.info, "etcd: claimed back slot block \(block), with what it holds"))
            case .claimFailed(let block, let reason):
                guard case .claim = blocks[block].pending else { return }
                blocks[block].pending = nil
                pause(at: now, into: &effects)
                effects.append(.log(.warning, "etcd: could not claim block \(block): \(reason)"))
            case .releaseAnswered(let block, let result):
                guard case .release = blocks[block].pending else { return }
                blocks[block].pending = nil
                if result.succeeded {
                    // Free now, in this node's view too: the watch's word on it comes later, and
                    // a plan made meanwhile must not give it back again.
                    if takeChange(of: block, at: result.revision) { setFree(block) }
                    blocks[block].servedBeforeLeaseLost = false
                } else {
                    // Not this node's claim any more (an earlier try on another endpoint gave it
                    // back, then timed out): not served again before a read says whose it is.
                    notMine(block, into: &effects)
                }
            case .releaseFailed(let block, let reason):
                guard case .release = blocks[block].pending else { return }
                blocks[block].pending = nil
                // Given back or not: unknown until the next read says. Not this node's meanwhile.
                notMine(block, into: &effects)
                pause(at: now, into: &effects)
                effects.append(.log(.warning, "etcd: could not give back block \(block): \(reason)"))
            case .emptied(let emptied, let succeeded):
                for block in emptied where blocks[block].pending == .emptying { blocks[block].pending = nil }
                guard !leaving, let id = leaseID else { return }
                guard succeeded else { return pause(at: now, into: &effects) }
                var count = 0
                for block in emptied where blocks[block].holder == .this && blocks[block].lease == id {
                    blocks[block].served = true
                    blocks[block].emptiedUnder = blocks[block].claimRevision
                    count += 1
                }
                let total = blocks.filter(\.served).count
                if count > 0 {
                    effects.append(.log(.info, "etcd: serving \(count) more slot blocks (\(total) in all)"))
                }
            case .published(let number):
                guard number > publishedNumber, let served = viewsInFlight[number] else { return }
                publishedNumber = number
                publishedServed = served
                viewsInFlight = viewsInFlight.filter { $0.key > number }
            default:
                break
            }
        }

        /// `block` is not this node's as far as it knows (a release whose outcome is unknown, or
        /// that etcd refused): not served, and the map read again to learn whose it is.
        private mutating func notMine(_ block: Int, into effects: inout [OwnershipEffect]) {
            blocks[block].holder = .anotherUnknown
            blocks[block].served = false
            effects.append(.readMap)
        }

        /// No new claim, release or emptying for a fourth of the lease (or until the next
        /// renewal): something failed, and trying again at once would spin while etcd is down.
        private mutating func pause(at now: UInt64, into effects: inout [OwnershipEffect]) {
            pausedUntil = now &+ leaseNanoseconds / 4
            effects.append(.schedule(.retryPaused, afterNanoseconds: leaseNanoseconds / 4))
        }

        /// Moves toward this node's share: claims back what it served before its lease lapsed,
        /// gives back blocks over its share (once the server no longer serves them), claims free
        /// ones under it, empties what it gained, and hands the server the view when it changed.
        mutating func advance(at now: UInt64, into effects: inout [OwnershipEffect]) {
            if hasRead, !leaving, let id = leaseID, fence.allowsServing(at: now), members[nodeID] != nil,
                now >= pausedUntil
            {
                claimBack(lease: id, at: now, into: &effects)
                claimAndRelease(lease: id, at: now, into: &effects)
                serveGained(lease: id, into: &effects)
            }
            publishIfChanged(into: &effects)
            if let id = leaseToRevoke {
                let afterView = revokeAfterView ?? viewNumber
                revokeAfterView = afterView
                if publishedNumber >= afterView {
                    effects.append(.revoke(lease: id))
                    leaseToRevoke = nil
                }
            }
            // Releases go out once the server serves a view without their blocks, under the
            // lease they were claimed on (a release planned before the lease was lost is dropped:
            // the lease took the claim with it).
            for block in blocks.indices {
                guard case .release(let afterView, false) = blocks[block].pending else { continue }
                guard let id = leaseID, blocks[block].lease == id, blocks[block].holder == .this else {
                    blocks[block].pending = nil
                    continue
                }
                guard publishedNumber >= afterView else { continue }
                blocks[block].pending = .release(afterView: afterView, sent: true)
                effects.append(.release(block: block, lease: id))
            }
        }

        /// The blocks this node served when its lease lapsed, claimed back up to its share, each
        /// once etcd shows it free and only if this process is still its last claimant (nobody
        /// claimed it meanwhile, and it was not given back). One still under the old lease waits
        /// for etcd to delete it; one claimed since goes the usual way, emptied. After a lease,
        /// whatever is left goes the usual way too.
        private mutating func claimBack(lease id: String, at now: UInt64, into effects: inout [OwnershipEffect]) {
            let waiting = now < othersBlocksWaitUntil
            for block in blocks.indices where blocks[block].servedBeforeLeaseLost && blocks[block].pending == nil {
                let stillMine =
                    blocks[block].lastClaimant == claimant
                    && [.free, .anotherUnknown].contains(blocks[block].holder)
                if !waiting || !stillMine { blocks[block].servedBeforeLeaseLost = false }
            }
            var room = SlotBlocks.share(of: nodeID, among: Array(members.keys)) - ownedOrClaiming
            for block in blocks.indices where room > 0 {
                guard blocks[block].servedBeforeLeaseLost, blocks[block].pending == nil, blocks[block].holder == .free
                else { continue }
                blocks[block].pending = .claim(back: true, knownBefore: blocks[block].knownRevision)
                effects.append(.claim(block: block, lease: id, ifLastClaimant: claimant))
                room -= 1
            }
        }

        /// The blocks this node holds or is claiming (not those it is giving back).
        private var ownedOrClaiming: Int {
            blocks.filter {
                if case .claim = $0.pending { return true }
                if case .release = $0.pending { return false }
                return $0.holder == .this
            }.count
        }

        /// Gives back blocks over this node's share (served no more first) and claims free ones
        /// under it (`SlotBlocks.plan`).
        private mutating func claimAndRelease(lease id: String, at now: UInt64, into effects: inout [OwnershipEffect]) {
            // Registered again past a lost lease: other nodes' blocks are theirs to come back
            // for, and this node's own former blocks are not claimed emptied while they may be.
            let waiting = now < othersBlocksWaitUntil
            var left: Set<Int> = []
            var planned = SlotBlocks()
            for block in blocks.indices {
                let state = blocks[block]
                switch state.pending {
                case .claim: planned.owners[block] = nodeID
                case .release, .emptying: planned.owners[block] = state.holder == .this ? "" : nil
                case nil:
                    switch state.holder {
                    case .free: planned.owners[block] = nil
                    case .this: planned.owners[block] = nodeID
                    case .another(let owner): planned.owners[block] = owner
                    case .anotherUnknown: planned.owners[block] = ""
                    }
                }
                if state.pending == .emptying { planned.owners[block] = nodeID }
                let othersToComeBack =
                    waiting && !state.lastClaimant.isEmpty && !state.lastClaimant.hasPrefix(nodeID + " ")
                if state.servedBeforeLeaseLost || othersToComeBack { left.insert(block) }
            }
            let plan = planned.plan(for: nodeID, among: Array(members.keys), leaving: left)
            for block in plan.release where blocks[block].pending == nil && blocks[block].holder == .this {
                // The view that stops serving it is the next one handed out, or the last one when
                // that did not serve it.
                let inLastView = lastView?.blocks[block].owner == nodeID
                blocks[block].served = false
                blocks[block].pending = .release(afterView: viewNumber + (inLastView ? 1 : 0), sent: false)
            }
            for block in plan.claim where blocks[block].pending == nil && blocks[block].holder == .free {
                blocks[block].pending = .claim(back: false, knownBefore: blocks[block].knownRevision)
                effects.append(.claim(block: block, lease: id, ifLastClaimant: nil))
            }
        }

        /// Blocks etcd says are this node's under its lease that it does not serve: a claim just
        /// answered, one whose answer was lost, or a release that failed. One still under the
        /// claim it was emptied under is intact and served at once; the others are emptied first
        /// (what this node stored when it last owned them is not served again).
        private mutating func serveGained(lease id: String, into effects: inout [OwnershipEffect]) {
            // One emptying at a time: blocks gained meanwhile are emptied together after it (each
            // emptying is a pass over every key the server holds).
            let emptying = blocks.contains { $0.pending == .emptying }
            var gained: [Int] = []
            for block in blocks.indices {
                let state = blocks[block]
                guard state.holder == .this, state.lease == id, !state.served, state.pending == nil else { continue }
                if state.claimRevision > 0 && state.claimRevision == state.emptiedUnder {
                    blocks[block].served = true
                } else if !emptying {
                    gained.append(block)
                    blocks[block].pending = .emptying
                }
            }
            if !gained.isEmpty { effects.append(.empty(blocks: gained)) }
        }

        /// The view as served now: this node owns only what it serves, while its fence is open.
        package var view: OwnershipView {
            let served = blocks.map { state -> OwnershipView.Block in
                switch state.holder {
                case .this where state.served: OwnershipView.Block(owner: nodeID, claimRevision: state.claimRevision)
                case .another(let owner): OwnershipView.Block(owner: owner)
                default: OwnershipView.Block()
                }
            }
            return OwnershipView(members: members, blocks: served, servingUntil: fence.validUntil)
        }

        /// Hands the server the view when it differs from the last one handed out.
        private mutating func publishIfChanged(into effects: inout [OwnershipEffect]) {
            let current = view
            guard current != lastView else { return }
            lastView = current
            viewNumber += 1
            viewsInFlight[viewNumber] = Set(blocks.indices.filter { blocks[$0].served })
            effects.append(.publish(current, number: viewNumber))
        }
    }
#endif
