/// For each slot block, the etcd revision of the latest change this node has taken in, so that
/// news older than what it knows never undoes it: a read of the map sent before its own claim
/// was answered, or a watch that lags behind a claim, would otherwise show the block as another
/// node's or free, take it out of what the node serves, and have it emptied again (its keys
/// read nil though the block never moved). A value type; the ownership actor's.
package struct BlockRevisions: Equatable {
    /// The revision of the latest change taken in for each block (0: none yet).
    private(set) var known = [Int64](repeating: 0, count: SlotBlocks.count)

    /// Whether a change of `block` made at `revision` (a watch's event, a claim or release of
    /// this node's) is newer than what is known; if so it is taken in.
    mutating func takeChange(of block: Int, at revision: Int64) -> Bool {
        guard revision > known[block] else { return false }
        known[block] = revision
        return true
    }

    /// Whether a read of the whole map answered at `revision` may set `block` (nothing newer is
    /// known); if so the block is known as of that revision.
    mutating func takeRead(of block: Int, at revision: Int64) -> Bool {
        guard revision >= known[block] else { return false }
        known[block] = revision
        return true
    }
}
