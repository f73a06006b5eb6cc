import Testing

@testable import TaskidCluster
@testable import TaskidServer
@testable import taskid

/// The pure parts of slot ownership on etcd: how blocks are shared out, and the fence.
@Suite("slot ownership: blocks and the lease fence")
struct SlotOwnershipTests {
    @Test func blocksCoverTheSlotsExactly() {
        #expect(SlotBlocks.slotsPerBlock * SlotBlocks.count == HashSlot.count)
        #expect(SlotBlocks.slots(ofBlock: 0) == 0...127)
        #expect(SlotBlocks.slots(ofBlock: 127) == 16_256...16_383)
        #expect(SlotBlocks.block(ofSlot: 16_383) == 127)
        #expect(SlotBlocks.block(ofSlot: 128) == 1)
    }

    @Test(arguments: [1, 2, 3, 5, 7, 128, 200])
    func sharesAddUpToEveryBlockAndDifferByOneAtMost(nodes: Int) {
        let members = (0..<nodes).map { "node\($0)" }
        let shares = members.map { SlotBlocks.share(of: $0, among: members) }
        #expect(shares.reduce(0, +) == SlotBlocks.count)
        #expect(shares.max()! - shares.min()! <= 1)
        #expect(SlotBlocks.share(of: "stranger", among: members) == 0)
    }

    /// Every node applying its plan in turn, claims and releases succeeding as etcd's
    /// compare-and-swap would let them: no block is ever claimed twice.
    static func settle(_ blocks: inout SlotBlocks, members: [String]) {
        for _ in 0..<4 {
            for node in members {
                let plan = blocks.plan(for: node, among: members)
                for block in plan.release { blocks.owners[block] = nil }
                for block in plan.claim {
                    #expect(blocks.owners[block] == nil, "a claim only of a free block")
                    blocks.owners[block] = node
                }
            }
        }
    }

    @Test func nodesStartingTogetherSettleOnTheirShares() {
        var blocks = SlotBlocks()
        let members = ["a", "b", "c"]
        Self.settle(&blocks, members: members)
        #expect(blocks.owners.allSatisfy { $0 != nil }, "every block owned")
        #expect(members.map { blocks.blocks(of: $0).count } == [43, 43, 42])
        #expect(blocks.blocks(of: "a") == Array(0..<43), "in id order, contiguous")
    }

    @Test func aDeadNodesBlocksAreTakenByTheSurvivorsEvenly() {
        var blocks = SlotBlocks()
        Self.settle(&blocks, members: ["a", "b", "c"])
        // c's lease expired: its keys went with it.
        for block in blocks.blocks(of: "c") { blocks.owners[block] = nil }
        Self.settle(&blocks, members: ["a", "b"])
        #expect(blocks.owners.allSatisfy { $0 != nil })
        #expect(blocks.blocks(of: "a").count == 64 && blocks.blocks(of: "b").count == 64)
    }

    /// After an etcd stall past the lease every block is free at once: a node that registers
    /// again first leaves the blocks whose last claimant is another node to that node, and
    /// claims none of them, while a dead node's blocks (nothing left) are claimed as usual.
    @Test func blocksLeftToTheirLastOwnerAreNotClaimed() {
        var blocks = SlotBlocks()
        Self.settle(&blocks, members: ["a", "b"])
        let bBlocks = Set(blocks.blocks(of: "b"))
        for block in 0..<SlotBlocks.count { blocks.owners[block] = nil }
        // a is back first and alone in the map, with a share of every block.
        let plan = blocks.plan(for: "a", among: ["a"], leaving: bBlocks)
        #expect(plan.release.isEmpty)
        #expect(Set(plan.claim).isDisjoint(with: bBlocks), "b's blocks are left to b")
        #expect(plan.claim.count == SlotBlocks.count - bBlocks.count)
        #expect(blocks.plan(for: "a", among: ["a"]).claim.count == SlotBlocks.count, "left to nobody: all claimed")
    }

    @Test func aJoiningNodeGetsItsShareFromTheOthersReleases() {
        var blocks = SlotBlocks()
        Self.settle(&blocks, members: ["a", "b"])
        Self.settle(&blocks, members: ["a", "b", "c"])
        #expect(blocks.owners.allSatisfy { $0 != nil })
        #expect(["a", "b", "c"].map { blocks.blocks(of: $0).count } == [43, 43, 42])
        // What a and b kept is the start of what they had: their first blocks never moved.
        #expect(blocks.blocks(of: "a") == Array(0..<43))
    }

    @Test func theFenceClosesBeforeTheLeaseCanExpire() {
        let second: UInt64 = 1_000_000_000
        var fence = LeaseFence(ttlNanoseconds: 3 * second, marginNanoseconds: 1 * second)
        #expect(!fence.allowsServing(at: 0), "nothing served before the first answer")
        fence.renewed(sentAt: 10 * second)
        #expect(fence.allowsServing(at: 11 * second))
        #expect(!fence.allowsServing(at: 12 * second), "ttl - margin after the request was sent")
        // An answer to an older keep-alive, arriving late, never shortens the fence.
        fence.renewed(sentAt: 5 * second)
        #expect(fence.allowsServing(at: 11 * second))
        // Paused for longer than the lease: on waking, the node is fenced at once.
        #expect(!fence.allowsServing(at: 20 * second))
        fence.renewed(sentAt: 20 * second)
        #expect(fence.allowsServing(at: 21 * second))
        fence.revoked()
        #expect(!fence.allowsServing(at: 21 * second))
    }
    @Test func clusterInfoSaysFailWhileTheFenceIsClosed() {
        let me = ClusterNode(id: "a", host: "127.0.0.1", port: 7001, slotRanges: [])
        let everyBlockMine = [String?](repeating: "a", count: SlotBlocks.count)
        let now = MonotonicClock.nanoseconds()
        func state(until: UInt64) -> Substring? {
            let cluster = ClusterConfiguration(
                members: [("a", "127.0.0.1", 7001)], blockOwners: everyBlockMine, myself: me, servingUntil: until)
            return RegistryServer.infoText(cluster).split(separator: "\r\n").first
        }
        #expect(state(until: now + 60_000_000_000) == "cluster_state:ok")
        // Every slot has its node, but this node's lease is not confirmed: it accepts no query.
        #expect(state(until: now) == "cluster_state:fail")
        #expect(state(until: 0) == "cluster_state:fail")
    }
    #if Etcd
        @Test func aWatchLineGivesEachChangeWithItsRevision() throws {
            let key = EtcdBase64.encode("/taskid/t/blocks/3")
            let value = EtcdBase64.encode("node1")
            let line = """
                {"result":{"header":{"revision":"15"},"events":[\
                {"kv":{"key":"\(key)","value":"\(value)","lease":"42","mod_revision":"14"}},\
                {"type":"DELETE","kv":{"key":"\(key)","mod_revision":"15"}}]}}
                """
            let changes = try EtcdClient.changes(inWatchLine: Array(line.utf8))
            #expect(
                changes == [
                    .put(.init(key: "/taskid/t/blocks/3", value: "node1", lease: "42", revision: 14)),
                    .delete(key: "/taskid/t/blocks/3", revision: 15),
                ])
        }
    #endif
}
