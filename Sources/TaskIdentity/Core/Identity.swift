/// The identity of a task declared with several values (`id: baseURL, path`): equal when every
/// value is equal, with no `[AnyHashable]` boxing of each value.
///
/// A value type; may be used on any thread.
public struct CompoundIdentity<each Value: Hashable & Sendable>: Hashable, Sendable {
    /// The values, in declaration order.
    public let values: (repeat each Value)

    /// Wraps `values`. May be called from any thread.
    public init(_ values: repeat each Value) {
        self.values = (repeat each values)
    }

    /// Equal when each value equals its counterpart.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        for (left, right) in repeat (each lhs.values, each rhs.values) {
            guard left == right else { return false }
        }
        return true
    }

    /// Hashes every value in order.
    public func hash(into hasher: inout Hasher) {
        for value in repeat each values { hasher.combine(value) }
    }
}

/// The stored identity of a task declared without an id: a value of a type of its own, equal
/// only to itself. Records, contexts and queued runs store an identity as a plain existential,
/// never as an optional one: copying an optional existential goes through the runtime's
/// generic `Optional` witnesses (about a hundred instructions a copy, three copies per
/// change), where a plain one calls its type's copy directly. `TaskContext.id` reads it as
/// `nil`.
///
/// A value type; may be used on any thread.
@usableFromInline
struct NoIdentity: Hashable, Sendable {
    @usableFromInline init() {}
}

/// Which of a slot's tasks a declaration means, like the position of a `.task` modifier on a
/// view: a slot hosts one task per name. Most slots have one task and use `.main`.
///
/// A value type; may be used on any thread.
public struct TaskName: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The name as written.
    public let rawValue: String

    /// The name of a slot's task when none is given.
    public static let main = TaskName(rawValue: "main")

    /// Creates a name. May be called from any thread.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Creates a name from a string literal: `name: "load"`.
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The raw name.
    public var description: String { rawValue }
}

/// The stored identity of a declaration: `NoIdentity` for none, the value itself for one, a
/// `CompoundIdentity` for several.
@inlinable
func makeIdentity<each ID: Hashable & Sendable>(_ id: repeat each ID) -> any Hashable & Sendable {
    // Counted first, so that a single value is wrapped once, straight into the result (making
    // a `NoIdentity` to overwrite cost about 120 instructions a declaration).
    var count = 0
    for _ in repeat each id { count += 1 }
    if count == 1 {
        for value in repeat each id { return value }
    }
    return count == 0 ? NoIdentity() : CompoundIdentity(repeat each id)
}
