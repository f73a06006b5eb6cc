import NIOCore
import TaskIdentity
import TaskLoopNIO
import Tracing

/// What a search commits: the query it ran for and the words it found.
///
/// A value type; may be used on any thread.
struct SearchResult: Sendable, Codable, Equatable {
    let query: String
    let matches: [String]
}

/// One user's search box as `/state` shows it.
///
/// A value type; may be used on any thread.
struct SearchState: Sendable, Codable {
    let user: String
    /// The latest query the user typed ("" before the first keystroke).
    let query: String
    /// The search task's phase (`idle`, `waiting`, `running`, `finished`, `cancelled(…)`, …).
    let phase: String
    /// How many queries the search box has had; 0 before the first.
    let generation: UInt64
    /// Whether a spinner should show: on only once a search has run for 150 ms.
    let showsProgress: Bool
    /// The latest results that reached the user: always those of a query that was current when
    /// it finished, never a stale one.
    let results: SearchResult?
}

/// One event loop's share of the users' search boxes, beside that loop's registry shard (whose
/// slots are the boxes, key = user id): the query each user typed last, and the search and
/// clear templates that a keystroke declares.
///
/// Threading: `typed` lives on the event loop's thread; `keystroke` and `state` are called
/// there, with the loop's registry shard (through `SearchBoxes`, which hops with
/// `ShardedTaskRegistry.onShard(for:_:)`).
///
/// `Sendable`: `typed` is a `LoopBound`, checked on every access; the rest is immutable.
final class SearchShard: Sendable {
    /// The latest query of each user. Event loop thread only.
    private let typed: LoopBound<[String: String]>
    /// The search a keystroke declares: made once, so a keystroke allocates no closure. Its
    /// identity is the query, typed.
    private let search: TypedTaskTemplate<String, String>
    /// What an empty query declares: clears the results at once, without searching.
    private let clear: TypedTaskTemplate<String, String>

    /// Creates the shard of `loop`; each search waits `latency` for the fake backend.
    ///
    /// May be called from any thread.
    init(loop: NIOTaskLoop, latency: Duration) throws {
        typed = LoopBound([:], loop: loop)
        // Debounce: only a query held for 250 ms is searched, so a burst of keystrokes runs
        // one search. Progress: a spinner only for searches still running after 150 ms.
        search = try TypedTaskTemplate<String, String>(
            debounce: .milliseconds(250), progressDelay: .milliseconds(150)
        ) { _, query, context in
            // The backend call, as an instrumented client would trace it: a span of its own,
            // the run's child (the run's span is `ServiceContext.current` here). Its latency
            // runs on the event loop's timer; a newer query cancels the run, the sleep throws
            // CancellationError, and nothing is committed.
            let found = try await withSpan("backend search", ofKind: .client) { span in
                span.attributes["search.query"] = query
                try await context.clock.sleep(for: latency)
                return SearchResult(query: query, matches: WordList.matches(query))
            }
            // Dropped (and counted as stale) if a newer query took over in the meantime.
            context.commit(result: found)
        }
        clear = try TypedTaskTemplate<String, String>.synchronous { _, _, context in
            context.commit(result: SearchResult(query: "", matches: []))
        }
    }

    /// Re-declares `user`'s search in `registry` (this loop's shard) with the new query as its
    /// identity: an equal query leaves the search alone, a new one cancels the running search
    /// (or re-arms the debounce).
    ///
    /// - Returns: the search box's generation after the keystroke.
    /// - Throws: `RegistryError.shutDown` once the service is shutting down.
    /// - Note: Event loop thread only.
    func keystroke(user: String, query: String, in registry: TaskRegistry<String>) throws -> UInt64 {
        typed.value[user] = query
        try registry.task(user, id: query, template: query.isEmpty ? clear : search)
        return try registry.generation(of: user) ?? 0
    }

    /// The search box of `user` now, from `registry` (this loop's shard). Every registry read
    /// of the example is here, so that a change of the registry's query API touches one
    /// function.
    ///
    /// - Throws: `RegistryError.calledOffLoopThread` off the event loop's thread.
    /// - Note: Event loop thread only (the registry's synchronous getters are loop-thread only;
    ///   `snapshot(of:)` is their any-thread form).
    func state(of user: String, in registry: TaskRegistry<String>) throws(RegistryError) -> SearchState {
        try SearchState(
            user: user,
            query: typed.value[user] ?? "",
            phase: registry.phase(of: user).map { "\($0)" } ?? "idle",
            generation: registry.generation(of: user) ?? 0,
            showsProgress: registry.showsProgress(of: user),
            results: registry.result(of: user, as: SearchResult.self))
    }
}
