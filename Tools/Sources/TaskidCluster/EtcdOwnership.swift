#if Etcd
    import Logging

    /// Runs one node's `OwnershipMachine` against etcd (`taskid serve --etcd`): feeds it events
    /// one at a time, and carries out its effects: calls to an `EtcdStore` (each in a task of its
    /// own, its answer fed back as an event), the watch, timers, the server's views (handed over
    /// one at a time, in order) and the emptying of blocks gained. An actor: `run()` takes the
    /// events in; `readiness()` and `handOver()` may be called from any task meanwhile.
    package actor EtcdOwnership {
        /// This node: its id and the address clients are sent to.
        package nonisolated let myself: ClusterNode
        let settings: EtcdSettings
        let store: any EtcdStore
        let logger: Logger
        /// Hands the server the cluster to serve, with its number in the order of the views.
        /// Returns once the server serves it. Any task.
        let publish: @Sendable (ClusterConfiguration, UInt64) async -> Void
        /// Empties blocks this node has just gained; false when it could not, and they must not
        /// be served. Any task.
        let dropKeys: @Sendable ([Int]) async -> Bool

        var machine: OwnershipMachine
        private let events: AsyncStream<OwnershipEvent>
        private let eventSink: AsyncStream<OwnershipEvent>.Continuation
        private let views: AsyncStream<(OwnershipView, UInt64)>
        private let viewSink: AsyncStream<(OwnershipView, UInt64)>.Continuation
        /// The calls under way, by number, cancelled when `run()` ends.
        private var calls: [UInt64: Task<Void, Never>] = [:]
        private var nextCall: UInt64 = 0
        /// Revocations under way: the hand-over waits for them.
        private var revocations: [Task<Void, Never>] = []
        private var timers: [OwnershipTimer: Task<Void, Never>] = [:]
        private var watch: Task<Void, Never>?

        /// Ownership for `myself` on the cluster `settings` names, through `store`.
        package init(
            settings: EtcdSettings, myself: ClusterNode, store: any EtcdStore, logger: Logger,
            publish: @escaping @Sendable (ClusterConfiguration, UInt64) async -> Void,
            dropKeys: @escaping @Sendable ([Int]) async -> Bool
        ) {
            self.settings = settings
            self.myself = myself
            self.store = store
            self.logger = logger
            self.publish = publish
            self.dropKeys = dropKeys
            machine = OwnershipMachine(
                nodeID: myself.id, address: "\(myself.host):\(myself.port)", prefix: settings.prefix,
                leaseSeconds: settings.leaseSeconds, waitForID: settings.waitForID,
                incarnation: UInt64.random(in: 0...UInt64.max))
            (events, eventSink) = AsyncStream.makeStream(of: OwnershipEvent.self)
            // Only the newest view waits: one that is not handed over yet is out of date once a
            // newer one exists (a renewal's fence must not queue behind views of claims).
            (views, viewSink) = AsyncStream.makeStream(
                of: (OwnershipView, UInt64).self, bufferingPolicy: .bufferingNewest(1))
        }

        /// Follows the map, keeps the lease and claims the node's share until the task is
        /// cancelled; then cancels every call, timer and the watch.
        package func run() async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.handOutViews() }
                feed(.start)
                for await event in events {
                    if Task.isCancelled { break }
                    carryOut(machine.handle(event, at: MonotonicClock.nanoseconds()))
                }
                viewSink.finish()
                group.cancelAll()
            }
            for call in calls.values { call.cancel() }
            for timer in timers.values { timer.cancel() }
            watch?.cancel()
        }

        /// Whether the node serves its share now, or what it waits for. Any task.
        package func readiness() -> OwnershipMachine.Readiness {
            machine.readiness(at: MonotonicClock.nanoseconds())
        }

        /// Whether etcd confirmed a lease at least once. Any task.
        package func hasRegistered() -> Bool { machine.hasRegistered }

        /// SIGTERM: stops serving every block, then revokes the lease, which deletes this node's
        /// keys at once so that the others claim its blocks without waiting for it to expire;
        /// returns once they have (or after twice the lease time, or once the lease is revoked
        /// when it knows no other node), so that the drain can answer `-MOVED` to the new owners.
        package func handOver() async {
            let mine = machine.blocks.filter { $0.holder == .this }.count
            carryOut(machine.handle(.leave, at: MonotonicClock.nanoseconds()))
            let deadline = MonotonicClock.nanoseconds() &+ UInt64(2 * settings.leaseSeconds) * 1_000_000_000
            // The revocation waits for the server to serve nothing of this node's.
            while machine.leaseToRevoke != nil, MonotonicClock.nanoseconds() < deadline, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(5))
            }
            for revocation in revocations { await revocation.value }
            while !machine.handedOver, MonotonicClock.nanoseconds() < deadline, !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(20))
            }
            if !machine.members.keys.contains(where: { $0 != myself.id }) {
                logger.info("etcd: no other node to hand \(mine) slot blocks over to")
            } else if machine.handedOver {
                logger.info("etcd: handed over \(mine) slot blocks")
            } else {
                logger.warning("etcd: \(mine) slot blocks given up; not all claimed by others within twice the lease")
            }
        }

        private nonisolated func feed(_ event: OwnershipEvent) { eventSink.yield(event) }

        /// Hands the server each view in turn, and says when it serves it.
        private func handOutViews() async {
            for await (view, number) in views {
                let members = view.members.compactMap { id, address -> (id: String, host: String, port: Int)? in
                    guard let colon = address.lastIndex(of: ":"),
                        let port = Int(address[address.index(after: colon)...])
                    else { return nil }
                    return (id, String(address[..<colon]), port)
                }
                await publish(
                    ClusterConfiguration(
                        members: members, blockOwners: view.blocks.map(\.owner), myself: myself,
                        servingUntil: view.servingUntil, claimRevisions: view.blocks.map(\.claimRevision)),
                    number)
                feed(.published(number: number))
            }
        }

        private func carryOut(_ effects: [OwnershipEffect]) {
            for effect in effects { carryOut(effect) }
        }

        private func carryOut(_ effect: OwnershipEffect) {
            let store = store
            let key = settings.prefix
            let id = myself.id
            switch effect {
            case .grantLease(let seconds, let sentAt):
                call {
                    do {
                        let granted = try await store.grantLease(seconds: seconds)
                        return .leaseGranted(id: granted.id, ttl: granted.ttl, sentAt: sentAt)
                    } catch { return .leaseGrantFailed("\(error)") }
                }
            case .register(let grant):
                let address = machine.address
                call {
                    do {
                        let result = try await store.createIfAbsent(key + "members/" + id, value: address, lease: grant)
                        return .registrationAnswered(grant: grant, succeeded: result.succeeded)
                    } catch { return .registrationFailed(grant: grant, "\(error)") }
                }
            case .readHolder(let grant):
                call {
                    do {
                        return .holderRead(grant: grant, holder: try await store.value(of: key + "members/" + id))
                    } catch {
                        return .holderReadFailed(grant: grant, "\(error)")
                    }
                }
            case .keepAlive(let lease, let sentAt):
                call {
                    do {
                        return .renewalAnswered(lease: lease, ttlLeft: try await store.keepAlive(lease), sentAt: sentAt)
                    } catch {
                        return .renewalFailed(lease: lease, "\(error)")
                    }
                }
            case .revoke(let lease):
                let logger = logger
                revocations.append(
                    Task {
                        do { try await store.revoke(lease) } catch {
                            logger.warning(
                                "etcd: could not revoke lease \(lease); its keys go when it expires: \(error)")
                        }
                    })
            case .readMap:
                call {
                    do {
                        let read = try await store.read(prefix: key)
                        return .mapRead(revision: read.revision, values: read.values)
                    } catch { return .mapReadFailed("\(error)") }
                }
            case .watch(let number, let revision):
                watch?.cancel()
                watch = Task {
                    do {
                        for try await batch in try await store.watch(prefix: key, after: revision) {
                            self.feed(.watched(number: number, batch))
                        }
                        if !Task.isCancelled { self.feed(.watchEnded(number: number, "etcd ended it")) }
                    } catch {
                        if !Task.isCancelled { self.feed(.watchEnded(number: number, "\(error)")) }
                    }
                }
            case .claim(let block, let lease, let lastClaimant):
                let claimant = machine.claimant
                call {
                    do {
                        let result = try await store.claim(
                            key + "blocks/\(block)", value: id, lease: lease, claimsKey: key + "claims/\(block)",
                            claimant: claimant, ifLastClaimant: lastClaimant)
                        return .claimAnswered(block: block, lease: lease, result)
                    } catch { return .claimFailed(block: block, "\(error)") }
                }
            case .release(let block, let lease):
                call {
                    do {
                        let result = try await store.release(
                            key + "blocks/\(block)", value: id, lease: lease, claimsKey: key + "claims/\(block)")
                        return .releaseAnswered(block: block, result)
                    } catch { return .releaseFailed(block: block, "\(error)") }
                }
            case .empty(let blocks):
                let dropKeys = dropKeys
                call { .emptied(blocks: blocks, succeeded: await dropKeys(blocks)) }
            case .publish(let view, let number):
                viewSink.yield((view, number))
            case .schedule(let timer, let delay):
                timers[timer]?.cancel()
                timers[timer] = Task {
                    do { try await Task.sleep(for: .nanoseconds(Int64(clamping: delay))) } catch { return }
                    self.feed(.timerFired(timer))
                }
            case .log(let level, let text):
                logger.log(level: level, "\(text)")
            }
        }

        /// Runs `body` in a task of its own and feeds its event back, unless `run()` has ended.
        private func call(_ body: @escaping @Sendable () async -> OwnershipEvent) {
            let number = nextCall
            nextCall += 1
            calls[number] = Task {
                let event = await body()
                if !Task.isCancelled { self.feed(event) }
                await self.callEnded(number)
            }
        }

        private func callEnded(_ number: UInt64) { calls[number] = nil }
    }
#endif
