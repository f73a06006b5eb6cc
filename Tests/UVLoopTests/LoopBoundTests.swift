import Dispatch
import Testing

@testable import UVLoop

@Suite("LoopBound checks the loop thread on every access")
struct LoopBoundTests {
    final class Model {
        var count = 0
    }

    @Test func accessOnTheLoopThreadReadsAndWrites() throws {
        let loop = TestLoop()
        let bound = LoopBound(Model(), loop: loop)
        bound.value.count += 1
        let counts = LoopBound([1, 2], loop: loop)
        counts.value.append(3)  // `_modify` in place
        try loop.execute { bound.value.count += 1 }  // a closure run by the loop, on its thread
        loop.run()
        #expect(bound.value.count == 2)
        #expect(counts.value == [1, 2, 3])
        loop.shutdown()
    }

    /// The misuse the `@unchecked Sendable` would otherwise hide: a read from another thread
    /// stops the process instead of racing.
    @Test func readingOffTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = TestLoop()
            let bound = LoopBound(Model(), loop: loop)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                _ = bound.value.count
                done.signal()
            }
            done.wait()
        }
    }

    @Test func writingOffTheLoopThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = TestLoop()
            let bound = LoopBound(0, loop: loop)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                bound.value = 1
                done.signal()
            }
            done.wait()
        }
    }
}
