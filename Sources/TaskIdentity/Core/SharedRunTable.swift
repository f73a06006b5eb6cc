/// The shared runs that slots may still join, by their template's action and identity (see
/// `SharedRun`).
///
/// Loop thread only, inside its core.
final class SharedRunTable {
    private var runs: [SharedRunKey: SharedRun] = [:]

    /// Whether no shared run may be joined.
    var isEmpty: Bool { runs.isEmpty }

    /// The run of `key` that slots may join, if any.
    func run(for key: SharedRunKey) -> SharedRun? { runs[key] }

    /// `run` may be joined by slots declaring its identity.
    func insert(_ run: SharedRun) { runs[run.key] = run }

    /// `run` may no longer be joined (a later run of the same key stays).
    func remove(_ run: SharedRun) {
        if runs[run.key] === run { runs[run.key] = nil }
    }
}
