import Hummingbird
import Prometheus
import TaskIdentity

/// The answer to a keystroke: the query was declared; its results come later, in `/state`.
///
/// A value type; may be used on any thread.
struct KeystrokeAccepted: ResponseEncodable, Sendable {
    let user: String
    let query: String
    let generation: UInt64
}

/// `/stats`: the registries' counters, added up over the event loops.
///
/// A value type; may be used on any thread.
struct Stats: ResponseEncodable, Sendable {
    let registries: Int
    let declared: UInt64
    let unchanged: UInt64
    let started: UInt64
    let coalesced: UInt64
    let cancelled: UInt64
    let finished: UInt64
    let failed: UInt64
    let staleCommitsDropped: UInt64
    let liveSlots: Int
    let runningActions: Int

    init(registries: Int, _ counters: RegistryCounters) {
        self.registries = registries
        declared = counters.declared
        unchanged = counters.unchanged
        started = counters.started
        coalesced = counters.coalesced
        cancelled = counters.cancelled
        finished = counters.finished
        failed = counters.failed
        staleCommitsDropped = counters.staleCommitsDropped
        liveSlots = counters.liveSlots
        runningActions = counters.runningActions
    }
}

extension SearchState: ResponseEncodable {}

/// The HTTP routes of the service:
/// - `GET /search?user=U&q=QUERY`: a keystroke (re-declares U's search with id QUERY);
/// - `GET /state?user=U`: U's query, phase, generation, progress signal and latest results;
/// - `GET /stats`: the registries' counters;
/// - `GET /metrics`: every swift-metrics metric in Prometheus's text format: the requests
///   (`MetricsMiddleware`), the registries' counters, and their timers (`search_time_to_start`,
///   `search_run_duration`, `search_loop_lag`).
///
/// Handlers run on Hummingbird's tasks; they reach the registries only through `SearchBoxes`,
/// which hops to the right event loop without blocking.
enum SearchRoutes {
    /// Adds the routes to `router`. Call it while building the application, from any thread.
    static func register(
        on router: Router<BasicRequestContext>, boxes: SearchBoxes, prometheus: PrometheusCollectorRegistry
    ) {
        router.get("search") { request, _ -> KeystrokeAccepted in
            let user = try userParameter(of: request)
            let query = request.uri.queryParameters["q"].map(String.init) ?? ""
            let generation = try await boxes.keystroke(user: user, query: query)
            return KeystrokeAccepted(user: user, query: query, generation: generation)
        }
        router.get("state") { request, _ -> SearchState in
            try await boxes.state(of: try userParameter(of: request))
        }
        router.get("stats") { _, _ -> Stats in
            Stats(registries: boxes.shards.count, try await boxes.counters())
        }
        router.get("metrics") { _, _ -> String in
            prometheus.emitToString()
        }
    }

    /// The non-empty `user` query parameter, or a 400 answer.
    private static func userParameter(of request: Request) throws -> String {
        guard let user = request.uri.queryParameters["user"], !user.isEmpty else {
            throw HTTPError(.badRequest, message: "the query parameter user= is required")
        }
        return String(user)
    }
}
