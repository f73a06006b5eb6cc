/// The waiters of one priority of a limit with round-robin fairness
/// (`ConcurrencyLimit.Fairness.roundRobin(by:)`): each group's waiters in the order they
/// joined, and the groups that have waiters served in turn, one waiter each.
///
/// Each group numbers its waiters in order (`Group.waiters`, by number, from `head`): a waiter
/// that leaves early (a replaced or removed generation) is taken out by its number, and the
/// group's next one is the lowest number still there. A group with no waiter left is dropped.
///
/// Loop thread only, inside its `LimitQueue`.
final class FairLane {
    /// One group's waiters.
    final class Group {
        let key: AnyHashable
        /// The waiters still queued, by number, each with its place in the lane's order of
        /// joining (`FairLane.joined`): waiters that joined in one loop turn share a time.
        var waiters: [UInt32: (waiter: LimitQueue.Waiter, order: UInt64)] = [:]
        /// The lowest number that may still be queued, and the next number to give.
        var head: UInt32 = 0
        var next: UInt32 = 0

        init(key: AnyHashable) { self.key = key }

        /// The first waiter still queued, skipping the numbers of those that left.
        func first() -> (number: UInt32, waiter: LimitQueue.Waiter, order: UInt64)? {
            while head != next {
                if let entry = waiters[head] { return (head, entry.waiter, entry.order) }
                head &+= 1
            }
            return nil
        }
    }

    /// The groups with waiters, by key.
    private var groups: [AnyHashable: Group] = [:]
    /// The groups with waiters, in the order of their turns: `turns[turn...]`, the next first.
    private var turns: [Group] = []
    private var turn = 0
    /// Waiters queued, over every group.
    private(set) var count = 0
    /// Waiters that ever joined: each one's place in the order of joining.
    private var joined: UInt64 = 0

    /// Queues `waiter` last in `key`'s group; returns the group and the waiter's number.
    func append(_ waiter: LimitQueue.Waiter, group key: AnyHashable) -> (Group, UInt32) {
        let group: Group
        if let existing = groups[key] {
            group = existing
        } else {
            group = Group(key: key)
            groups[key] = group
            turns.append(group)  // a new group's turn comes after those already waiting
        }
        let number = group.next
        group.next &+= 1
        group.waiters[number] = (waiter, joined)
        joined &+= 1
        count += 1
        return (group, number)
    }

    /// Takes the waiter numbered `number` out of `group`.
    func remove(_ number: UInt32, from group: Group) {
        guard group.waiters.removeValue(forKey: number) != nil else { return }
        count -= 1
        if group.waiters.isEmpty { drop(group) }
    }

    /// Takes out the first waiter of the group whose turn it is; that group's next turn comes
    /// after every other group's.
    func removeHead() -> LimitQueue.Waiter? {
        while turn < turns.count {
            let group = turns[turn]
            turn += 1
            guard let (number, waiter, _) = group.first() else { continue }  // dropped: stale turn
            group.waiters[number] = nil
            count -= 1
            if group.waiters.isEmpty { drop(group) } else { turns.append(group) }
            compactTurns()
            return waiter
        }
        return nil
    }

    /// Takes out the waiter that joined first, over every group (a full queue sheds it).
    func removeOldest() -> LimitQueue.Waiter? {
        var oldest: (group: Group, number: UInt32, waiter: LimitQueue.Waiter, order: UInt64)?
        for group in groups.values {
            guard let (number, waiter, order) = group.first() else { continue }
            if oldest == nil || order < oldest!.order { oldest = (group, number, waiter, order) }
        }
        guard let oldest else { return nil }
        remove(oldest.number, from: oldest.group)
        return oldest.waiter
    }

    /// When the waiter that has waited longest joined.
    var earliestSince: UInt64? { groups.values.compactMap { $0.first()?.waiter.since }.min() }

    /// Every waiter, for the queue's invariant.
    var allWaiters: [LimitQueue.Waiter] { groups.values.flatMap { $0.waiters.values.map(\.waiter) } }

    /// `group` has no waiter left: it is forgotten, and its turn (if still to come) is skipped.
    private func drop(_ group: Group) {
        groups[group.key] = nil
    }

    /// Forgets the turns already taken, once they are half of the list.
    private func compactTurns() {
        guard turn > 32 && turn * 2 > turns.count else { return }
        turns.removeFirst(turn)
        turn = 0
    }
}
