import Observation
import Synchronization
import Testing
import UVLoop

@testable import TaskIdentity

#if canImport(Glibc)
    import Glibc
#endif

/// The seed's image loader: the URL is derived from two properties.
@Observable
final class ImageModel {
    var baseURL = "https://a.example"
    var path = "/avatar.png"
    var title = "Profile"
    var image: String?
    /// Read by the identity closure, but not tracked.
    @ObservationIgnored var imageScale = 1

    var url: String { baseURL + path }
}

/// A counter that a task tracks and (in the cycle tests) writes.
@Observable
final class Counter {
    var value = 0
    var other = 0
}

/// The registry's counters that observation moves, for compact expectations.
func evaluations<Key>(_ registry: TaskRegistry<Key>) -> UInt64 { try! registry.counters.identityEvaluations }

/// A model written from several threads at once: each property is stored atomically, and its
/// accessors report to Observation by hand (what `@Observable` generates, around an atomic).
final class SharedCounter: Observable, Sendable {
    private let registrar = ObservationRegistrar()
    private let storage = Atomic<Int>(0)

    var value: Int {
        get {
            registrar.access(self, keyPath: \.value)
            return storage.load(ordering: .acquiring)
        }
        set {
            registrar.withMutation(of: self, keyPath: \.value) { storage.store(newValue, ordering: .releasing) }
        }
    }
}

/// An object whose lifetime shows whether a closure that captured it was freed.
final class Witness: Sendable {}

/// A plain thread that runs `body` and hands back its result.
final class PlainThread<Result: Sendable>: ThreadBody, @unchecked Sendable {
    // @unchecked Sendable: `result` is written by the thread before `join` reads it (pthread_join orders them).
    private var result: Result?
    private var handle = pthread_t()
    private let body: @Sendable () -> Result

    init(_ body: @escaping @Sendable () -> Result) {
        self.body = body
        start()
    }

    private func start() {
        let box = Unmanaged<AnyObject>.passRetained(self).toOpaque()
        var created = pthread_t()
        pthread_create(&created, nil, plainThreadMain, box)
        handle = created
    }

    /// Runs the body on the new thread. Any thread.
    func runBody() { result = body() }

    func join() -> Result {
        pthread_join(handle, nil)
        return result!
    }
}

/// What a plain thread's C entry point calls.
protocol ThreadBody: AnyObject {
    func runBody()
}

private func plainThreadMain(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    (Unmanaged<AnyObject>.fromOpaque(raw!).takeRetainedValue() as! any ThreadBody).runBody()
    return nil
}
