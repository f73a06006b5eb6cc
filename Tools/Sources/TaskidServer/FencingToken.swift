import TaskIdentity
import TaskidCluster
import TaskidRESP
import UVLoop

/// A run's fencing token on etcd (`taskid serve --etcd`): the claim revision of its key's
/// block on this node, then the run's generation. etcd's revisions only grow, and a block's
/// next owner claims it at a later revision than every earlier owner did, so any run a new
/// owner starts has a larger token than every run of the old one: storage behind the server
/// that keeps the largest token it has seen per key (or per block) can refuse the work of a
/// node that has lost its block, even one paused past its lease that wakes with runs in
/// flight. Within one owner, the generation orders the runs of a key. Compared field by
/// field; written `<claim revision>.<generation>`. A value type; any thread.
package struct FencingToken: Comparable, Sendable, CustomStringConvertible {
    /// The revision of the claim under which this node serves the key's block; 0 when it does
    /// not serve it.
    package let claimRevision: Int64
    package let generation: UInt64

    package static func < (left: FencingToken, right: FencingToken) -> Bool {
        (left.claimRevision, left.generation) < (right.claimRevision, right.generation)
    }

    package var description: String { "\(claimRevision).\(generation)" }
}

/// Each block's claim revision as the runs of one loop read it: a copy per loop, written before
/// the front loop serves a view with new claims, so that a run never reads an older claim than
/// the one its SET was accepted under; with the number of the view they came with, so that an
/// older view never replaces a newer one. Loop-bound; empty outside etcd.
package typealias RunClaimRevisions = LoopBound<(view: UInt64, revisions: [Int64])>

extension RegistryServer {
    /// The token a run of `key` carries now on the loop whose copy is `revisions`, with its
    /// `generation`; nil outside etcd. On that loop.
    static func fencingToken(of key: ServerKey, generation: UInt64, in revisions: RunClaimRevisions) -> FencingToken? {
        let claims = revisions.value.revisions
        guard !claims.isEmpty else { return nil }
        let block = SlotBlocks.block(ofSlot: HashSlot.of(key.bytes))
        return FencingToken(claimRevision: claims[block], generation: generation)
    }

    /// Hands each loop the claim revisions of `cluster`, view `number`, unless it has a later
    /// view's; returns once every loop has them. Any task.
    func shareClaimRevisions(of cluster: ClusterConfiguration, number: UInt64) async {
        let revisions = cluster.claimRevisions
        for (loop, copy) in zip(group.loops, runClaimRevisions) {
            _ = try? await loop.submit {
                if number > copy.value.view { copy.value = (number, revisions) }
            }
        }
    }

    /// `TASK.INFO key`: the key's run as a map (RESP3) or a flat array of names and values:
    /// `phase` (as `TASK.PHASE`, nil for no run), `generation` (0 for none), `slot`, `block`,
    /// `claim_revision` (on etcd; 0 otherwise) and `fencing_token` (`<claim revision>.<generation>`
    /// on etcd, nil otherwise). Front loop only.
    func taskInfo(of key: ServerKey, version: RESPVersion, into out: inout [UInt8]) async throws {
        let (phase, generation) = try await registry.onShard(for: key) { shard throws -> (String?, UInt64) in
            (try shard.phase(of: key)?.description, try shard.generation(of: key) ?? 0)
        }
        let slot = HashSlot.of(key.bytes)
        let block = SlotBlocks.block(ofSlot: slot)
        let claims = cluster?.claimRevisions ?? []
        let claimRevision = claims.isEmpty ? 0 : claims[block]
        RESPReply.mapHeader(6, version, into: &out)
        RESPReply.bulk("phase".utf8, into: &out)
        if let phase { RESPReply.bulk(phase.utf8, into: &out) } else { RESPReply.null(version, into: &out) }
        for (name, value) in [("generation", Int(generation)), ("slot", slot), ("block", block)] {
            RESPReply.bulk(name.utf8, into: &out)
            RESPReply.integer(value, into: &out)
        }
        RESPReply.bulk("claim_revision".utf8, into: &out)
        RESPReply.integer(Int(claimRevision), into: &out)
        RESPReply.bulk("fencing_token".utf8, into: &out)
        if claims.isEmpty {
            RESPReply.null(version, into: &out)
        } else {
            RESPReply.bulk(
                FencingToken(claimRevision: claimRevision, generation: generation).description.utf8, into: &out)
        }
    }
}
