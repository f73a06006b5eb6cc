#if Etcd
    import Testing

    @testable import TaskidCluster

    /// The ownership state machine on the in-memory etcd, in virtual time: each fault of the
    /// chaos check (`scripts/cluster --etcd --chaos`), with the invariants checked after every
    /// step (`OwnershipSimulation`): never two nodes serving one block, never a node serving a
    /// block etcd does not give it under a live lease.
    @Suite("slot ownership: the state machine on an in-memory etcd, in virtual time")
    struct OwnershipMachineTests {
        /// Four nodes, settled on their shares.
        static func settled(_ count: Int = 4) -> OwnershipSimulation {
            var simulation = OwnershipSimulation()
            for index in 0..<count { simulation.start("node\(index)") }
            simulation.run(for: 3)
            return simulation
        }

        /// Each block's owner as etcd holds it.
        static func ownersInEtcd(_ simulation: OwnershipSimulation) -> [String?] {
            (0..<SlotBlocks.count).map { simulation.etcd.keys["/taskid/sim/blocks/\($0)"]?.value }
        }

        /// The blocks `node` serves now.
        static func served(by node: Int, _ simulation: OwnershipSimulation) -> [Int] {
            (0..<SlotBlocks.count).filter { simulation.nodes[node].serves($0, at: simulation.now) }
        }

        /// Runs in steps of 10 ms until `condition` holds; the virtual time it took, nil if it
        /// did not within `limit` seconds.
        static func time(
            _ simulation: inout OwnershipSimulation, limit: Double, until condition: (OwnershipSimulation) -> Bool
        ) -> Double? {
            let start = simulation.now
            while Double(simulation.now - start) / 1e9 < limit {
                if condition(simulation) { return Double(simulation.now - start) / 1e9 }
                simulation.run(for: 0.01)
            }
            return nil
        }

        @Test func nodesSettleOnTheirSharesAndServeThem() {
            let simulation = Self.settled()
            for node in simulation.nodes { #expect(node.machine.readiness(at: simulation.now) == .ready) }
            let shares = simulation.nodes.indices.map { Self.served(by: $0, simulation).count }
            #expect(shares == [32, 32, 32, 32])
            #expect(Set(simulation.nodes.indices.flatMap { Self.served(by: $0, simulation) }).count == 128)
            #expect(simulation.violations.isEmpty)
        }

        /// A killed node's blocks are served again within the lease + 1 s, under claims whose
        /// revisions (the fencing token's block part) are higher than the dead node's.
        @Test func aKilledNodesBlocksAreServedAgainWithinTheLeasePlusOneUnderHigherTokens() throws {
            var simulation = Self.settled()
            let dead = Self.served(by: 0, simulation)
            let tokens = dead.map { simulation.nodes[0].machine.blocks[$0].claimRevision }
            simulation.kill(0)
            let took = try #require(
                Self.time(&simulation, limit: 10) { simulation in
                    dead.allSatisfy { block in
                        (1...3).contains { simulation.nodes[$0].serves(block, at: simulation.now) }
                    }
                })
            #expect(took <= 3.0)
            for (block, token) in zip(dead, tokens) {
                let owner = try #require((1...3).first { simulation.nodes[$0].serves(block, at: simulation.now) })
                #expect(simulation.nodes[owner].machine.blocks[block].claimRevision > token)
            }
            simulation.run(for: 1)
            #expect((1...3).allSatisfy { simulation.nodes[$0].machine.readiness(at: simulation.now) == .ready })
            #expect(simulation.violations.isEmpty)
        }

        /// A node paused past its lease: its blocks move; woken, it serves nothing another node
        /// owns (its fence closed), and it comes back to its share.
        @Test func aNodePausedPastItsLeaseServesNothingItLostAndComesBack() {
            var simulation = Self.settled()
            let before = Self.served(by: 1, simulation)
            simulation.pause(1)
            simulation.run(for: 6)
            #expect(
                before.allSatisfy { block in
                    [0, 2, 3].contains { simulation.nodes[$0].serves(block, at: simulation.now) }
                })
            simulation.resume(1)
            simulation.run(for: 6)
            #expect(simulation.nodes[1].machine.readiness(at: simulation.now) == .ready)
            #expect(Self.served(by: 1, simulation).count == 32)
            #expect(simulation.violations.isEmpty)
        }

        /// etcd killed for longer than the lease and restarted (its leader renews every lease):
        /// no block moves and no value is lost.
        @Test func etcdDownAndRestartedMovesNoBlock() {
            var simulation = Self.settled()
            for node in simulation.nodes.indices { simulation.write("sentinel", by: node) }
            let owners = Self.ownersInEtcd(simulation)
            simulation.stopEtcd()
            simulation.run(for: 4)
            simulation.restartEtcd()
            simulation.run(for: 4)
            #expect(Self.ownersInEtcd(simulation) == owners)
            for node in simulation.nodes.indices {
                #expect(simulation.nodes[node].machine.readiness(at: simulation.now) == .ready)
                #expect(
                    Self.served(by: node, simulation).allSatisfy { simulation.nodes[node].values[$0] == ["sentinel"] })
            }
            #expect(simulation.violations.isEmpty)
        }

        /// etcd stalled past the lease: every lease expires, every node registers again and
        /// claims back what it served, with what it holds. No block moves, no value is lost.
        @Test func anEtcdStallPastTheLeaseMovesNoBlockAndLosesNoValue() {
            var simulation = Self.settled()
            for node in simulation.nodes.indices { simulation.write("sentinel", by: node) }
            let owners = Self.ownersInEtcd(simulation)
            let leases = simulation.nodes.map { $0.machine.leaseID }
            simulation.stallEtcd()
            simulation.run(for: 5)
            simulation.resumeEtcd()
            simulation.run(for: 5)
            // Every lease had expired: the nodes hold new ones.
            #expect(zip(leases, simulation.nodes).allSatisfy { $0 != $1.machine.leaseID })
            #expect(simulation.nodes.allSatisfy { $0.logs.contains { $0.contains("the lease expired") } })
            #expect(Self.ownersInEtcd(simulation) == owners)
            for node in simulation.nodes.indices {
                let served = Self.served(by: node, simulation)
                #expect(served.count == 32)
                #expect(served.allSatisfy { simulation.nodes[node].values[$0] == ["sentinel"] })
            }
            #expect(simulation.violations.isEmpty)
        }

        /// A node joining takes its share, and only its share moves.
        @Test func aJoiningNodeTakesItsShareAndNothingElseMoves() {
            var simulation = Self.settled(3)
            let before = Self.ownersInEtcd(simulation)
            simulation.start("node3")
            simulation.run(for: 3)
            let after = Self.ownersInEtcd(simulation)
            let moved = (0..<SlotBlocks.count).filter { before[$0] != after[$0] }
            #expect(moved.count == 32)
            #expect(moved.allSatisfy { after[$0] == "node3" })
            #expect(simulation.nodes.allSatisfy { $0.machine.readiness(at: simulation.now) == .ready })
            #expect(simulation.violations.isEmpty)
        }

        /// A join makes the others give blocks back; etcd applies node0's releases but their
        /// answers are lost, and node0's watch is silent, so nothing tells it the blocks went.
        /// node0 serves none of them again (the new node does), and the shares settle.
        @Test func aReleaseWhoseAnswerIsLostIsNeverServedAgain() {
            var simulation = Self.settled(3)
            simulation.releaseAnswersLost = [0]
            simulation.silentWatches = [0]
            simulation.start("node3")
            simulation.run(for: 4)
            #expect(Self.served(by: 0, simulation).count == 32)
            #expect(simulation.nodes.allSatisfy { $0.machine.readiness(at: simulation.now) == .ready })
            #expect(simulation.nodes[0].logs.contains { $0.contains("could not give back") })
            #expect(simulation.violations.isEmpty)
        }

        /// SIGTERM: the node stops serving, revokes its lease, and the others claim its blocks
        /// at once, well before the lease would have expired.
        @Test func aLeavingNodeHandsItsBlocksOverAtOnce() throws {
            var simulation = Self.settled()
            let leaving = Self.served(by: 2, simulation)
            simulation.leave(2)
            let took = try #require(
                Self.time(&simulation, limit: 5) { simulation in
                    simulation.nodes[2].machine.handedOver
                        && leaving.allSatisfy { block in
                            [0, 1, 3].contains { simulation.nodes[$0].serves(block, at: simulation.now) }
                        }
                })
            #expect(took < 0.5)
            #expect(Self.served(by: 2, simulation).isEmpty)
            #expect(simulation.violations.isEmpty)
        }

        /// A second node under a live id is refused, naming the holder, and changes nothing;
        /// with `--wait-for-id` it waits, and takes over once the first is gone.
        @Test func aSecondNodeUnderALiveIDIsRefusedOrWaits() {
            var simulation = Self.settled(2)
            let owners = Self.ownersInEtcd(simulation)
            let refused = simulation.start("node0", address: "10.0.0.9:6380")
            let waiting = simulation.start("node1", address: "10.0.0.8:6380", waitForID: true)
            simulation.run(for: 2)
            #expect(simulation.nodes[refused].machine.readiness(at: simulation.now) == .idTaken(by: "10.0.0.1:6380"))
            #expect(simulation.nodes[waiting].machine.readiness(at: simulation.now) != .ready)
            #expect(Self.ownersInEtcd(simulation) == owners)
            #expect(simulation.etcd.keys["/taskid/sim/members/node0"]?.value == "10.0.0.1:6380")
            simulation.kill(1)
            simulation.run(for: 5)
            #expect(simulation.nodes[waiting].machine.readiness(at: simulation.now) == .ready)
            #expect(simulation.etcd.keys["/taskid/sim/members/node1"]?.value == "10.0.0.8:6380")
            #expect(simulation.violations.isEmpty)
        }

        /// A watch's lagging events (older than a claim the node saw answered) change nothing:
        /// the block stays the node's, served, and not emptied again.
        @Test func staleWatchEventsNeverUndoANewerClaim() throws {
            var simulation = Self.settled(2)
            simulation.write("kept", by: 0)
            let block = try #require(Self.served(by: 0, simulation).first)
            let claimed = simulation.nodes[0].machine.blocks[block].claimRevision
            let key = "/taskid/sim/blocks/\(block)"
            let delivered = simulation.deliverStale(
                [
                    .put(EtcdKeyValue(key: key, value: "node1", lease: "1", revision: claimed - 1)),
                    .delete(key: key, revision: claimed),
                ], to: 0)
            #expect(delivered)
            simulation.run(for: 1)
            #expect(simulation.nodes[0].serves(block, at: simulation.now))
            #expect(simulation.nodes[0].values[block] == ["kept"])
            #expect(simulation.violations.isEmpty)
        }

        /// A read of the map sent before a claim was answered, and answered after it, shows the
        /// block free: it must not undo the claim (the revision bug fixed in an earlier round).
        @Test func aReadOlderThanAClaimNeverUndoesIt() throws {
            var machine = OwnershipMachine(
                nodeID: "a", address: "h:1", prefix: "/p/", leaseSeconds: 2, waitForID: false, incarnation: 1)
            _ = machine.handle(.start, at: 0)
            _ = machine.handle(.leaseGranted(id: "9", ttl: 2, sentAt: 0), at: 1)
            _ = machine.handle(.registrationAnswered(grant: "9", succeeded: true), at: 2)
            let member = EtcdKeyValue(key: "/p/members/a", value: "h:1", lease: "9", revision: 3)
            let claims = machine.handle(.mapRead(revision: 3, values: [member]), at: 3)
            #expect(claims.filter { if case .claim = $0 { true } else { false } }.count == 128)
            _ = machine.handle(.claimAnswered(block: 7, lease: "9", .init(succeeded: true, revision: 10)), at: 4)
            #expect(machine.blocks[7].holder == .this)
            _ = machine.handle(.mapRead(revision: 8, values: [member]), at: 5)
            #expect(machine.blocks[7].holder == .this)
            #expect(machine.blocks[7].claimRevision == 10)
            // A read at the claim's revision or later is news again.
            _ = machine.handle(.mapRead(revision: 12, values: [member]), at: 6)
            #expect(machine.blocks[7].holder == .free)
        }
    }
#endif
