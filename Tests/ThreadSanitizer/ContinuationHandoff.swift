// The false report that scripts/tsan-suppressions.txt silences, in a program with none of the
// library's code: a thread that polls a locked queue (as TestLoop's driver does) resumes
// `UnsafeContinuation`s, and each resumed task writes its own frame on a pool thread.
// ThreadSanitizer cannot see the runtime's hand-off of the task between the two threads, so it
// reports the resume's read and the task's write as a race. Built by hand, not by the package:
//
//     swiftc -O -sanitize=thread -parse-as-library Tests/ThreadSanitizer/ContinuationHandoff.swift -o /tmp/handoff
//     /tmp/handoff    # "WARNING: ThreadSanitizer: data race" in UnsafeContinuation.resume(returning:)
import Foundation

final class Handoffs: @unchecked Sendable {  // unchecked: `waiting` is only touched under `lock`
    private let lock = NSLock()
    private var waiting: [UnsafeContinuation<Int, Never>] = []

    func park() async -> Int {
        await withUnsafeContinuation { continuation in
            lock.lock()
            waiting.append(continuation)
            lock.unlock()
        }
    }

    /// Resumes whatever is parked; returns how many.
    func resumeAll(with value: Int) -> Int {
        lock.lock()
        let ready = waiting
        waiting = []
        lock.unlock()
        for continuation in ready { continuation.resume(returning: value) }
        return ready.count
    }
}

@main
enum ContinuationHandoff {
    static func main() async {
        let handoffs = Handoffs()
        let tasks = 2_000
        let driver = Thread {
            var resumed = 0
            var round = 0
            while resumed < tasks {
                round += 1
                resumed += handoffs.resumeAll(with: round)
            }
        }
        driver.start()
        var total = 0
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    var frame = [Int](repeating: 0, count: 8)  // the task's own state, written after resuming
                    frame[0] = await handoffs.park()
                    frame[1] = frame[0] &* 2
                    return frame[1]
                }
            }
            for await value in group { total &+= value }
        }
        print("resumed \(tasks) tasks, checksum \(total)")
    }
}
