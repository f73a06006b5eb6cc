/// A call on a declared task that neither declares nor removes it (`cancel`, `runNow`,
/// `dropPending`, `escalate`). A value type; may be used on any thread.
@usableFromInline
enum TaskControl: Sendable {
    case cancel
    case runNow
    case dropPending
    /// Raise the current generation to this priority (`TaskPriority.rawValue`).
    case escalate(UInt8)
}
