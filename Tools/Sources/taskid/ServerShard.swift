import TaskIdentity
import UVLoop

/// What `GET` returns: the id whose run finished last, and that run's generation.
struct ServerResult: Sendable {
    let id: String
    let generation: UInt64
}

/// One registry shard. Loop-confined to the shard's loop. Each key's result is stored in the
/// registry with its task (`commit(result:)`), so a run's end needs no lookup by key.
///
/// Unchecked `Sendable`: `work` is set once in init; the registry it drives is confined to `loop`.
final class ServerShard: @unchecked Sendable {
    let loop: UVLoop
    let registry: TaskRegistry<ServerKey>
    /// What every SET runs: one template, so a SET allocates no closure.
    private(set) var work: TaskTemplate<ServerKey>!

    init(loop: UVLoop, configuration: ServerConfiguration) throws {
        self.loop = loop
        registry = TaskRegistry<ServerKey>(loop: loop)
        let debounce = Duration.milliseconds(configuration.debounceMilliseconds)
        switch configuration.work {
        case .sleep(let milliseconds):
            work = try .synchronous(debounce: debounce, after: .milliseconds(milliseconds)) {
                [unowned self] key, context in
                self.commit(context)
            }
        case .taskSleep(let milliseconds):
            work = try TaskTemplate<ServerKey>(debounce: debounce) { [unowned self] key, context in
                try await context.clock.sleep(for: .milliseconds(milliseconds))
                self.commit(context)
            }
        case .upstream(let host, let port):
            work = try TaskTemplate<ServerKey>(debounce: debounce) { [unowned self] key, context in
                let connection = try await self.loop.connect(host: host, port: port)
                defer { connection.close() }
                try await connection.write(Array("PING\r\n".utf8))
                _ = try await connection.read()
                self.commit(context)
            }
        }
    }

    /// Stores the run's result for `GET`, if the run is still the key's current one.
    private func commit(_ context: TaskContext) {
        let id = context.id(as: String.self)!
        context.commit(result: ServerResult(id: id, generation: context.generation))
    }

    /// Runs `body` on this shard's loop: at once when already there, else hopping there.
    func onLoop<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        if loop.inLoop { return try body() }
        return try await loop.submit(body)
    }
}
