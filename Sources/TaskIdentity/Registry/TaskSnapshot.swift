/// One task as it was when read on its loop thread: what `TaskRegistry.snapshot(of:name:)`
/// returns to any thread, in one hop to the loop.
///
/// A value type; may be used on any thread.
public struct TaskSnapshot: Sendable, CustomStringConvertible {
    /// The phase of the task's latest generation.
    public let phase: TaskPhase
    /// How many identities the task has had in its slot's lifetime.
    public let generation: UInt64
    /// Whether the delayed progress signal of the current run is on.
    public let showsProgress: Bool
    /// The latest result a run stored (`TaskContext.commit(result:)`), or `nil`.
    public let result: (any Sendable)?

    /// Reads `record`. Loop thread only.
    init(record: AnyTaskRecord) {
        phase = record.phase
        generation = record.generation
        showsProgress = record.showsProgress
        result = record.result?.value
    }

    /// The latest stored result as `type`, or `nil` if none was stored or it is of another
    /// type. May be called from any thread.
    public func result<Value>(as type: Value.Type) -> Value? { result as? Value }

    /// `generation N: phase`, with `(progress)` while the progress signal is on.
    public var description: String {
        "generation \(generation): \(phase)" + (showsProgress ? " (progress)" : "")
    }
}
