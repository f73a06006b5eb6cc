/// How the 16,384 hash slots are shared out on etcd (`taskid serve --etcd`): in blocks of
/// `slotsPerBlock` contiguous slots, each owned by at most one node at a time (its etcd key is
/// bound to the owner's lease, so it goes when the lease does). A block is the unit of a claim,
/// a hand-over and a move; 128 blocks spread evenly over up to 128 nodes with few keys to watch.
///
/// This type decides, from what etcd says now, which blocks a node should claim and which it
/// should give back so that every live node ends with its fair share: the pure part of the
/// protocol, tested on its own. A value type; any thread.
package struct SlotBlocks: Equatable {
    /// The number of blocks; a divisor of `HashSlot.count`.
    package static let count = 128
    /// The slots of one block.
    package static let slotsPerBlock = HashSlot.count / count

    /// The block of `slot`.
    package static func block(ofSlot slot: Int) -> Int { slot / slotsPerBlock }

    /// The slots of `block`.
    package static func slots(ofBlock block: Int) -> ClosedRange<Int> {
        (block * slotsPerBlock)...((block + 1) * slotsPerBlock - 1)
    }

    /// Each block's owner (a node id), nil for a block nobody holds.
    package var owners: [String?]

    /// No block owned.
    package init() {
        owners = Array(repeating: nil, count: Self.count)
    }

    /// The blocks `node` owns, ascending.
    package func blocks(of node: String) -> [Int] {
        owners.indices.filter { owners[$0] == node }
    }

    /// The fair share of `node` among `members` (the live nodes, `node` among them): the
    /// blocks divided evenly, the first `count % members.count` nodes in id order taking one
    /// more, so that the shares add up to every block and every node computes the same ones.
    package static func share(of node: String, among members: [String]) -> Int {
        let sorted = members.sorted()
        guard let rank = sorted.firstIndex(of: node) else { return 0 }
        return count / sorted.count + (rank < count % sorted.count ? 1 : 0)
    }

    /// What `node` should do now, given the live `members`: the free blocks to claim while
    /// it holds fewer than its share (the free ones nearest the start of its natural range
    /// first, so that nodes joining at once collide little), and the blocks to give back
    /// while it holds more (its last ones, so that what it keeps stays contiguous).
    /// Free blocks in `leaving` are not claimed (they wait for their last owner to come back).
    package func plan(for node: String, among members: [String], leaving: Set<Int> = []) -> (
        claim: [Int], release: [Int]
    ) {
        let share = Self.share(of: node, among: members)
        let mine = blocks(of: node)
        if mine.count > share { return ([], Array(mine.suffix(mine.count - share))) }
        let wanted = share - mine.count
        guard wanted > 0 else { return ([], []) }
        // Start the search where this node's blocks would lie if the blocks were split in id
        // order: nodes that start together then reach for different blocks.
        let sorted = members.sorted()
        let rank = sorted.firstIndex(of: node) ?? 0
        let start = (0..<rank).reduce(0) { $0 + Self.share(of: sorted[$1], among: sorted) }
        var claim: [Int] = []
        for offset in 0..<Self.count where claim.count < wanted {
            let block = (start + offset) % Self.count
            if owners[block] == nil && !leaving.contains(block) { claim.append(block) }
        }
        return (claim, [])
    }
}
