import Dispatch
import Testing

@testable import TaskLoopCore

@Suite("TestLoop is bound to the thread that creates it")
struct TestLoopThreadTests {
    /// Runs `body` on a dispatch worker thread, never the calling one (which blocks waiting).
    private func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = LoopConfined<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            result.value = body()
            done.signal()
        }
        done.wait()
        return result.value!
    }

    @Test func inLoopIsTrueOnlyOnTheCreatingThreadEvenWhileIdle() {
        let loop = TestLoop()
        #expect(loop.inLoop)
        // Idle (nobody inside run/advance): another thread is still not the loop thread.
        #expect(onAnotherThread { loop.inLoop } == false)
        loop.run()
        #expect(loop.inLoop)
        #expect(onAnotherThread { loop.inLoop } == false)
    }

    @Test func loopThreadRulesAreEnforcedOnOtherThreads() {
        let loop = TestLoop()
        // A broken thread rule is caught: a timer made off the loop thread is refused.
        let code = onAnotherThread { () -> LoopError.Code? in
            do {
                _ = try loop.makeTimer {}
                return nil
            } catch {
                return (error as? LoopError)?.code
            }
        }
        #expect(code == .calledOffLoopThread)
        // Work posted from another thread runs on the creating thread, at the next run.
        let ranInLoop = LoopConfined<Bool?>(nil)
        onAnotherThread { try! loop.execute { ranInLoop.value = loop.inLoop } }
        #expect(ranInLoop.value == nil)
        loop.run()
        #expect(ranInLoop.value == true)
        loop.shutdown()
    }
}
