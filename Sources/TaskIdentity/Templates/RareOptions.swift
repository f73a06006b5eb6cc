import TaskLoopCore

/// The declaration options that most tasks leave at their defaults (a retry policy, `staleAfter`,
/// `refreshEvery`), as one value that the process numbers (`number(…)`): a declaration's options
/// hold its four-byte number, where the options themselves take seventy bytes, so that
/// `TaskOptions.Values` stays at 128 bytes and copying it stays inline (see there).
///
/// A value type; may be used on any thread.
@usableFromInline
struct RareOptions: Hashable, Sendable {
    var retry: RetryPolicy?
    var staleAfter: Duration?
    var refreshEvery: Duration?
    var maxWait: Duration?
    var appendMaxQueued: Int?

    /// The number of these options in the process's table (from 1, in order of first use; a
    /// handful, since a program's options are written in its code, not made per change).
    @usableFromInline
    static func number(
        retry: RetryPolicy?, staleAfter: Duration?, refreshEvery: Duration?, maxWait: Duration?,
        appendMaxQueued: Int? = nil
    ) -> UInt32 {
        let options = RareOptions(
            retry: retry, staleAfter: staleAfter, refreshEvery: refreshEvery, maxWait: maxWait,
            appendMaxQueued: appendMaxQueued)
        return numbered.withLock { table in
            if let number = table.numbers[options] { return number }
            table.options.append(options)
            let number = UInt32(truncatingIfNeeded: table.options.count)
            table.numbers[options] = number
            return number
        }
    }

    /// The options numbered `number`, or nil for 0 (none set).
    static func options(numbered number: UInt32) -> RareOptions? {
        guard number != 0 else { return nil }
        return numbered.withLock { $0.options[Int(number) - 1] }
    }
}

/// Every distinct `RareOptions` declared in this process, numbered from 1. A `Locked` (a pthread
/// mutex), not `Synchronization.Mutex`: ThreadSanitizer reports false races inside the latter on
/// this toolchain, and declarations with rare options come from many threads in the TSan tests.
private let numbered = Locked<(numbers: [RareOptions: UInt32], options: [RareOptions])>(([:], []))
