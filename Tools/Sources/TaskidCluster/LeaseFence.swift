/// Whether this node may still serve the slots it owns on etcd, by its own clock: the fence
/// that keeps two nodes from ever serving one slot.
///
/// etcd expires a lease `ttl` after the last keep-alive it *received*. A keep-alive this node
/// *sent* at `t` and saw answered therefore keeps the lease alive at least until `t + ttl` by
/// etcd's clock, and another node can claim the slots only after that. The node serves until
/// `t + ttl - margin` by its own monotonic clock, the margin covering the two clocks running at
/// slightly different rates. A node that was paused (SIGSTOP), lost etcd or fell behind sees on
/// its next request that the time has passed and stops answering for its slots before anyone
/// can have claimed them; it serves again only after a new keep-alive is answered.
///
/// A value type, held by the loop that serves; times are monotonic nanoseconds.
package struct LeaseFence: Equatable {
    /// The lease's time to live, as etcd granted it.
    let ttlNanoseconds: UInt64
    /// How much earlier than etcd's earliest expiry this node stops serving.
    let marginNanoseconds: UInt64
    /// Until when (monotonic nanoseconds) this node may serve; 0 before the first answer.
    private(set) var validUntil: UInt64 = 0

    /// A fence for a lease of `ttl`, stopping `margin` before it can expire.
    /// - Precondition: `margin < ttl` (the settings are checked before: `EtcdSettings`).
    package init(ttlNanoseconds: UInt64, marginNanoseconds: UInt64) {
        precondition(marginNanoseconds < ttlNanoseconds, "the margin must be shorter than the lease")
        self.ttlNanoseconds = ttlNanoseconds
        self.marginNanoseconds = marginNanoseconds
    }

    /// A grant or keep-alive sent at `sentAt` was answered with the lease alive: the node may
    /// serve until `sentAt + ttl - margin`. An answer to an older request never shortens it.
    package mutating func renewed(sentAt: UInt64) {
        let until = sentAt &+ (ttlNanoseconds - marginNanoseconds)
        if until > validUntil { validUntil = until }
    }

    /// The lease is gone (etcd said so, or it was revoked on the way out): stop at once.
    package mutating func revoked() {
        validUntil = 0
    }

    /// Whether the node may serve its slots at `now`.
    package func allowsServing(at now: UInt64) -> Bool {
        now < validUntil
    }
}
