import Testing
import UVLoop

@testable import TaskIdentity

/// A `TaskContext` may outlive its action and its registry. Run under AddressSanitizer by
/// `scripts/test`: a record that reached its core without holding it would read freed memory here.
@Suite("Contexts that outlive their registry")
struct ReleasedRegistryTests {
    @Test func aContextThatEscapesItsActionAnswersNotCurrentAfterTheRegistryIsReleased() throws {
        let loop = TestLoop()
        let escaped = Confined<TaskContext?>(nil)
        let landed = Confined(false)
        weak var weakRegistry: TaskRegistry<String>?
        do {
            let registry = TaskRegistry<String>(loop: loop)
            weakRegistry = registry
            try registry.task("a", id: 1) { context in
                escaped.value = context
                try await loop.clock.sleep(for: .seconds(3600))
            }
            loop.run()
            #expect(escaped.value?.isCurrent == true)
        }
        loop.run()  // the release cancels the sleeping run, which ends
        #expect(weakRegistry == nil)
        let context = try #require(escaped.value)
        #expect(context.isCurrent == false)
        #expect(context.commit { landed.value = true } == false)
        #expect(context.commit(result: 42) == false)
        #expect(landed.value == false)
        loop.shutdown()
    }
}
