import Dispatch
import TaskLoopCore
import Testing

@testable import TaskIdentity

/// The process's table of rare options (retry, staleAfter, refreshEvery, maxWait), numbered from
/// many threads at once, as declarations from many threads number them. Under ThreadSanitizer
/// (scripts/test --all) this also checks that the table's lock is one TSan sees.
@Suite("Rare options numbered from many threads")
struct RareOptionsTests {
    @Test("each distinct set of rare options gets one number, and that number gives it back")
    func numbersFromManyThreadsAreConsistent() {
        // Durations no other test uses, so the numbers are new to the table here.
        let distinct = (0..<16).map { RareOptions(staleAfter: .nanoseconds(987_654_000 + $0)) }
        let threads = 4
        let numbers = Locked([[UInt32]](repeating: [], count: threads))
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            // Each thread starts its walk at its own offset, so first uses interleave; `mine`
            // holds the numbers in the values' own order.
            var mine = [UInt32](repeating: 0, count: distinct.count)
            for round in 0..<50 {
                for step in 0..<distinct.count {
                    let index = (step + thread * 5 + round) % distinct.count
                    let value = distinct[index]
                    let number = RareOptions.number(
                        retry: value.retry, staleAfter: value.staleAfter, refreshEvery: value.refreshEvery,
                        maxWait: value.maxWait)
                    if round == 0 { mine[index] = number } else if mine[index] != number { mine[index] = 0 }
                }
            }
            numbers.withLock { $0[thread] = mine }
        }
        let all = numbers.withLock { $0 }
        let expected = all[0]
        #expect(!expected.contains(0), "a value's number changed between rounds")
        #expect(Set(expected).count == distinct.count)
        for thread in all { #expect(thread == expected) }
        for (index, value) in distinct.enumerated() {
            #expect(RareOptions.options(numbered: expected[index]) == value)
        }
    }
}
