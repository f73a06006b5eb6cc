import TaskIdentity
import UVLoop

/// What `GET` returns: the id whose run finished last, and that run's generation.
///
/// 24 bytes, so the registry's `any Sendable` result holds it inline: one more byte and every
/// commit would box it on the heap (profiled: a quarter more CPU per restarting SET). The id
/// takes 17 bytes; the generation fills the 7 after it as 56 bits in three fields (declared in
/// this order so that each is aligned with no padding). 2^56 runs of one key is beyond reach:
/// 2,000 years at a million restarts a second. A value type; any thread.
package struct ServerResult: Sendable {
    package let id: ServerID
    private let generationLow8: UInt8
    private let generationMid16: UInt16
    private let generationHigh32: UInt32

    /// The largest generation stored exactly; larger ones are stored as this.
    package static let maxGeneration: UInt64 = (1 << 56) - 1

    package init(id: ServerID, generation: UInt64) {
        self.id = id
        let stored = min(generation, Self.maxGeneration)
        generationLow8 = UInt8(truncatingIfNeeded: stored)
        generationMid16 = UInt16(truncatingIfNeeded: stored >> 8)
        generationHigh32 = UInt32(truncatingIfNeeded: stored >> 24)
    }

    /// The run's generation.
    package var generation: UInt64 {
        UInt64(generationLow8) | UInt64(generationMid16) << 8 | UInt64(generationHigh32) << 24
    }
}

/// What a `SET` runs: one template per shard, made once, so that a SET allocates no closure.
/// Each key's result is stored in the registry with its task (`commit(result:)`), so a run's
/// end needs no lookup by key. A namespace; any thread.
package enum WorkTemplate {
    /// The template of the shard on `loop`: `--work upstream:` runs talk to the upstream
    /// through that loop, and carry their fencing token from `claimRevisions`. Any thread.
    ///
    /// - Throws: the registry's error when the template's options are refused.
    static func make(
        on loop: UVLoop, configuration: ServerConfiguration, upstreamLimits: UpstreamLimits,
        limit: ConcurrencyLimit?, claimRevisions: RunClaimRevisions
    ) throws -> TaskTemplate<ServerKey> {
        let debounce = Duration.milliseconds(configuration.debounceMilliseconds)
        let maxWait: Duration? =
            configuration.maxWaitMilliseconds > 0 ? .milliseconds(configuration.maxWaitMilliseconds) : nil
        let timeout: Duration? =
            configuration.timeoutMilliseconds > 0 ? .milliseconds(configuration.timeoutMilliseconds) : nil
        // The templates capture what they need, values only, so that they are `Sendable`.
        switch configuration.work {
        case .sleep(let milliseconds):
            return try .synchronous(
                debounce: debounce, maxWait: maxWait, timeout: timeout, limit: limit, after: .milliseconds(milliseconds)
            ) {
                key, context in
                commit(context)
            }
        case .taskSleep(let milliseconds):
            return try TaskTemplate<ServerKey>(debounce: debounce, maxWait: maxWait, timeout: timeout, limit: limit) {
                key, context in
                try await context.clock.sleep(for: .milliseconds(milliseconds))
                commit(context)
            }
        case .upstream(let host, let port):
            let limits = upstreamLimits
            return try TaskTemplate<ServerKey>(debounce: debounce, maxWait: maxWait, timeout: timeout, limit: limit) {
                key, context in
                // On etcd the run's fencing token goes with it (`PING <token>`), for the
                // upstream to refuse the work of a node that has lost the key's block.
                let token = RegistryServer.fencingToken(of: key, generation: context.generation, in: claimRevisions)
                try await limits.ping(host: host, port: port, on: loop, message: token?.description)
                commit(context)
            }
        }
    }

    /// Stores the run's result for `GET`, if the run is still the key's current one. On the
    /// run's loop (where a template's body runs).
    private static func commit(_ context: TaskContext) {
        let id = context.id(as: ServerID.self)!
        context.commit(result: ServerResult(id: id, generation: context.generation))
    }
}
