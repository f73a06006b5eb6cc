/// A progress delay's entry: valid only while that generation is still the running one.
/// The bound of a debounce window (`maxWait`): valid only while the window opened by
/// `window` (a generation) is still open.
struct MaxWaitEntry: DeadlineEntry {
    let record: AnyTaskRecord
    let window: UInt64
    let deadline: UInt64
}

struct ProgressEntry: DeadlineEntry {
    let record: AnyTaskRecord
    let generation: UInt64
    let deadline: UInt64
}

/// A synchronous run waiting out its delay: valid only while that generation is still the
/// running one (a cancelled run is skipped when its entry comes due).
struct SynchronousRunEntry: DeadlineEntry {
    let record: AnyTaskRecord
    let generation: UInt64
    let deadline: UInt64
    let action: SynchronousTaskAction
    /// The run's identity: the record's may have moved on meanwhile (`keepRunning`).
    let identity: any Hashable & Sendable
}
