/// One run of an observed task (`task(_:tracking:…)`), as a link of a causal chain: the run
/// whose writes made this task's identity change (`parent`), and how many such steps led here
/// (`depth`).
///
/// Each run of an observed task carries its link in the task-local `current` (and, while its
/// identity closure is evaluated, in `SynchronousCause`), for its action,
/// its commits and its child tasks, so that Observation, which reports a change synchronously
/// in the writer's context, tells which run wrote. A change with no run behind it (a request
/// handler, a timer, the test itself) starts a new chain at depth 0.
///
/// Immutable; may be read on any thread.
final class ObservedRun: Sendable {
    let key: any Hashable & Sendable
    let name: TaskName
    let generation: UInt64
    /// 0 for a run no observed run caused; the causing run's depth plus one otherwise.
    let depth: Int
    /// The run whose write caused this one, if any.
    let parent: ObservedRun?

    /// The run whose action, commit or child task is executing now, if it is an observed one.
    @TaskLocal static var current: ObservedRun?

    init(key: any Hashable & Sendable, name: TaskName, generation: UInt64, depth: Int, parent: ObservedRun?) {
        self.key = key
        self.name = name
        self.generation = generation
        self.depth = depth
        self.parent = parent
    }

    /// The chain that led to this run, its root first and this run last.
    var chain: [ObservationCycleError.Link] {
        var links: [ObservationCycleError.Link] = []
        var next: ObservedRun? = self
        while let run = next {
            links.append(ObservationCycleError.Link(key: run.key, name: run.name, generation: run.generation))
            next = run.parent
        }
        return links.reversed()
    }
}

/// The error of an observed task whose identity kept changing because of its own runs' writes,
/// directly (A → A) or through other observed tasks (A → B → A), past the registry's
/// `maxObservationDepth`.
///
/// The generation that would have continued the chain does not run its action: it ends
/// `failed` with this error, and its slot's previous run is cancelled, so the chain stops. The
/// task's tracking ends with it (a closure that re-triggers itself could not be stopped
/// otherwise): the task stays failed until it is declared again.
///
/// A value type; may be used on any thread.
public struct ObservationCycleError: Error, Equatable, Sendable, CustomStringConvertible {
    /// One run in the chain: its slot's key, its task's name and its generation.
    ///
    /// A value type; may be used on any thread.
    public struct Link: Equatable, Sendable, CustomStringConvertible {
        /// The slot's key (cast it back with `key as? MyKey`).
        public let key: any Hashable & Sendable
        /// The task's name within its slot.
        public let name: TaskName
        /// The run's generation within its slot's lifetime.
        public let generation: UInt64

        /// Equal when key (of the same type and `==`), name and generation are.
        public static func == (lhs: Link, rhs: Link) -> Bool {
            lhs.name == rhs.name && lhs.generation == rhs.generation && identitiesEqual(lhs.key, rhs.key)
        }

        /// Whether `other` is a run of the same task (same slot and name), of any generation.
        public func isSameTask(as other: Link) -> Bool {
            name == other.name && identitiesEqual(key, other.key)
        }

        /// `key/name#generation`, e.g. `"avatar"/main#3`.
        public var description: String { "\(String(reflecting: key))/\(name)#\(generation)" }
    }

    /// Every run of the chain in causal order: the run no observed run caused first, then each
    /// run caused by the one before it, and last the generation that was stopped.
    public let chain: [Link]
    /// The registry's `maxObservationDepth` when the chain was stopped.
    public let limit: Int

    /// Makes the error; may be called from any thread.
    public init(chain: [Link], limit: Int) {
        self.chain = chain
        self.limit = limit
    }

    /// The tasks that form the loop, in causal order, starting with the stopped task: the runs
    /// from the previous run of the stopped task on (`[A]` for A → A, `[A, B]` for A → B → A).
    /// Empty when the stopped task is not in the chain before (a chain of different tasks that
    /// grew past the limit without looping).
    public var cycle: [Link] {
        guard let stopped = chain.last else { return [] }
        let earlier = chain.dropLast()
        guard let previous = earlier.lastIndex(where: { $0.isSameTask(as: stopped) }) else { return [] }
        return Array(chain[previous..<chain.index(before: chain.endIndex)])
    }

    /// One line: the loop (or the chain, without one), then how long the chain grew.
    public var description: String {
        func task(_ link: Link) -> String { "\(String(reflecting: link.key))/\(link.name)" }
        let loop = cycle
        guard let first = loop.first else {
            return "observation chain stopped: \(chain.map(task).joined(separator: " → ")) grew past the limit of "
                + "\(limit) caused runs"
        }
        return "observation cycle stopped: \((loop + [first]).map(task).joined(separator: " → ")) kept changing its "
            + "own identity (a chain of \(chain.count) runs, past the limit of \(limit) caused runs)"
    }
}
