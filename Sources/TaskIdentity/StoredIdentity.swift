/// A declaration's identity as the registry keeps it. Integer identities (the common
/// `id: version`, `id: generation`) are kept as their bits and their type, so that storing,
/// comparing and handing them to a run copies two words instead of going through an
/// existential's value witnesses on every change; any other identity is kept as an existential.
/// `TaskContext.id` turns it back into the value that was declared.
///
/// A value type; may be used on any thread.
@usableFromInline
enum StoredIdentity: Sendable {
    /// Declared without an id: the task runs once per slot lifetime.
    case none
    /// An integer of one of the types `init(_:)` recognises, by its bits.
    case integer(UInt64, ObjectIdentifier)
    /// Any other identity (compound identities included).
    case value(any Hashable & Sendable)

    /// The stored form of `id` (one value or several, or none).
    @inlinable
    init<each ID: Hashable & Sendable>(_ id: repeat each ID) {
        var count = 0
        var first = StoredIdentity.none
        for value in repeat each id {
            if count == 0 { first = StoredIdentity.single(value) }
            count += 1
        }
        switch count {
        case 0: self = .none
        case 1: self = first
        default: self = .value(CompoundIdentity(repeat each id))
        }
    }

    /// `value` stored. The type tests fold away in specialized code: for `Int` this is two
    /// stores.
    @inlinable
    static func single<ID: Hashable & Sendable>(_ value: ID) -> StoredIdentity {
        // Bitwise equality is `==` for these types, and each maps back from its bits exactly.
        if ID.self == Int.self { return .integer(UInt64(bitPattern: Int64(value as! Int)), ObjectIdentifier(ID.self)) }
        if ID.self == UInt64.self { return .integer(value as! UInt64, ObjectIdentifier(ID.self)) }
        if ID.self == Int64.self { return .integer(UInt64(bitPattern: value as! Int64), ObjectIdentifier(ID.self)) }
        if ID.self == UInt.self { return .integer(UInt64(value as! UInt), ObjectIdentifier(ID.self)) }
        if ID.self == Int32.self {
            return .integer(UInt64(bitPattern: Int64(value as! Int32)), ObjectIdentifier(ID.self))
        }
        if ID.self == UInt32.self { return .integer(UInt64(value as! UInt32), ObjectIdentifier(ID.self)) }
        return .value(value)
    }

    /// SwiftUI's rule: equal when both are absent, or of the same type and `==`.
    @usableFromInline
    func isEqual(to other: StoredIdentity) -> Bool {
        switch (self, other) {
        case (.none, .none): return true
        case (.integer(let bits, let type), .integer(let otherBits, let otherType)):
            return bits == otherBits && type == otherType
        case (.value(let value), .value(let otherValue)): return identitiesEqual(value, otherValue)
        default: return false
        }
    }

    /// The identity as it was declared: the value itself, a `CompoundIdentity`, or nil.
    @usableFromInline
    var declaredValue: (any Hashable & Sendable)? {
        switch self {
        case .none: return nil
        case .value(let value): return value
        case .integer(let bits, let type):
            switch type {
            case ObjectIdentifier(Int.self): return Int(Int64(bitPattern: bits))
            case ObjectIdentifier(UInt64.self): return bits
            case ObjectIdentifier(Int64.self): return Int64(bitPattern: bits)
            case ObjectIdentifier(UInt.self): return UInt(bits)
            case ObjectIdentifier(Int32.self): return Int32(truncatingIfNeeded: Int64(bitPattern: bits))
            case ObjectIdentifier(UInt32.self): return UInt32(truncatingIfNeeded: bits)
            default: preconditionFailure("BUG DETECTED: an integer identity of an unknown type")
            }
        }
    }
}

/// Compares two identities of unknown types: equal when of the same type and `==`.
@usableFromInline
func identitiesEqual(_ lhs: any Hashable & Sendable, _ rhs: any Hashable & Sendable) -> Bool {
    // Opening both sides and comparing metatypes is a pointer compare; `rhs as? Left` would go
    // through the dynamic-cast machinery (profiled at a tenth of a debounced change).
    func compare<Left: Hashable>(_ lhs: Left) -> Bool {
        func compare<Right: Hashable>(_ rhs: Right) -> Bool {
            guard Left.self == Right.self else { return false }
            return lhs == unsafeBitCast(rhs, to: Left.self)
        }
        return compare(rhs)
    }
    return compare(lhs)
}
