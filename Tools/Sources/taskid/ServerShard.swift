import TaskIdentity
import UVLoop

/// What `GET` returns: the id whose run finished last, and that run's generation.
struct ServerResult: Sendable {
    let id: ServerID
    let generation: UInt64
}

/// One registry shard: a loop, its registry and the template every SET runs. Each key's result
/// is stored in the registry with its task (`commit(result:)`), so a run's end needs no lookup
/// by key.
///
/// Its properties may be read from any thread (all `let`); the registry they reach is used on
/// `loop` only, as `TaskRegistry` requires.
final class ServerShard: Sendable {
    let loop: UVLoop
    let registry: TaskRegistry<ServerKey>
    /// What every SET runs: one template, so a SET allocates no closure.
    let work: TaskTemplate<ServerKey>

    /// Builds the shard's registry and template. Any thread.
    ///
    /// - Throws: the registry's error when the template's options are refused.
    init(loop: UVLoop, configuration: ServerConfiguration, upstreamLimits: UpstreamLimits) throws {
        self.loop = loop
        registry = TaskRegistry<ServerKey>(loop: loop)
        let debounce = Duration.milliseconds(configuration.debounceMilliseconds)
        // The templates capture what they need (not `self`), so `work` can be a constant and
        // the shard needs no unchecked `Sendable`.
        switch configuration.work {
        case .sleep(let milliseconds):
            work = try .synchronous(debounce: debounce, after: .milliseconds(milliseconds)) { key, context in
                Self.commit(context)
            }
        case .taskSleep(let milliseconds):
            work = try TaskTemplate<ServerKey>(debounce: debounce) { key, context in
                try await context.clock.sleep(for: .milliseconds(milliseconds))
                Self.commit(context)
            }
        case .upstream(let host, let port):
            let limits = upstreamLimits
            work = try TaskTemplate<ServerKey>(debounce: debounce) { key, context in
                try await limits.ping(host: host, port: port, on: loop)
                Self.commit(context)
            }
        }
    }

    /// Stores the run's result for `GET`, if the run is still the key's current one. On the
    /// run's loop (where a template's body runs).
    private static func commit(_ context: TaskContext) {
        let id = context.id(as: ServerID.self)!
        context.commit(result: ServerResult(id: id, generation: context.generation))
    }

    /// Runs `body` on this shard's loop: at once when already there, else hopping there.
    /// Any task.
    func onLoop<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        if loop.inLoop { return try body() }
        return try await loop.submit(body)
    }
}
