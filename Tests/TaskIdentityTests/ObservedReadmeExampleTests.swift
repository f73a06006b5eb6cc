import Foundation
import Observation
import Testing
import UVLoop

@testable import TaskIdentity

// The README's observed-identity example, as written there, compiled under Swift 6's strict
// concurrency (this target's language mode) and run on the test loop.

@Observable final class ProfileModel {
    var baseURL = URL(string: "https://cdn.example.com")!
    var path = "avatars/42.png"
    var image: Data?
    @ObservationIgnored var scale = 2  // read by the identity below, never tracked
}

/// The README's `fetchImage`: here, the URL's bytes after 100 ms of the loop's virtual time.
private func fetchImage(_ url: URL, clock: LoopClock) async throws -> Data {
    try await clock.sleep(for: .milliseconds(100))
    return Data(url.absoluteString.utf8)
}

@Suite("The README's observed-identity example")
struct ObservedReadmeExampleTests {
    @Test func theAvatarFollowsItsURLAndIgnoresTheScaleAndItsOwnWrites() throws {
        let h = RegistryHarness<String>()
        let (loop, registry, log) = (h.loop, h.registry, h.log)
        let model = LoopBound(ProfileModel(), loop: loop)
        try registry.task(
            "avatar", tracking: { model.value.baseURL.appending(path: "\(model.value.path)@\(model.value.scale)x") }
        ) {
            url, context in
            log.add("fetch \(url.absoluteString)")
            let image = try await fetchImage(url, clock: context.clock)  // the action's reads: never tracked
            context.commit { model.value.image = image }  // its writes restart nothing: `image` is not read above
        }
        loop.advance(ms: 200)
        #expect(model.value.image == Data("https://cdn.example.com/avatars/42.png@2x".utf8))
        model.value.scale = 3  // @ObservationIgnored
        loop.advance(ms: 200)
        model.value.path = "avatars/43.png"
        loop.advance(ms: 200)
        #expect(
            log.take() == [
                "fetch https://cdn.example.com/avatars/42.png@2x", "fetch https://cdn.example.com/avatars/43.png@3x",
            ])
        #expect(model.value.image == Data("https://cdn.example.com/avatars/43.png@3x".utf8))
        #expect(try registry.counters.started == 2)
        h.finish()
    }
}
