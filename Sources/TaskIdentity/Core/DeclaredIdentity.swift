/// A declaration's identity as `TaskRegistry.apply` compares it with a record's and stores
/// it: typed where the declaring call knows its type (`TypedIdentity`), erased where it does
/// not (`ErasedIdentity`). Both are concrete types, so every declaring path is specialized.
///
/// Values; made and used on the declaring thread, stored on the loop thread.
@usableFromInline
protocol DeclaredIdentity {
    /// Whether `stored`, a record's identity, equals this one (of the same type, and `==`).
    func equals(_ stored: any Hashable & Sendable) -> Bool
    /// The identity as a record stores it.
    var erased: any Hashable & Sendable { get }
}

/// An identity whose type the declaring call knows: compared with its own `==`, with only the
/// record's side opened, and put in an existential only when it is stored.
@usableFromInline
struct TypedIdentity<ID: Hashable & Sendable>: DeclaredIdentity {
    @usableFromInline let value: ID

    @inlinable
    init(_ value: ID) { self.value = value }

    @inlinable
    func equals(_ stored: any Hashable & Sendable) -> Bool {
        func compare<Stored: Hashable>(_ stored: Stored) -> Bool {
            guard Stored.self == ID.self else { return false }
            return unsafeBitCast(stored, to: ID.self) == value  // bit cast to its own type: checked just above
        }
        return compare(stored)
    }

    @inlinable
    var erased: any Hashable & Sendable { value }
}

/// An identity compared by opening both sides: several values packed, none, a posted
/// declaration's, one value through the closure form `task(_:name:id:…)` (a parameter pack's
/// element, which Swift does not specialize a call with) and an observed value (compared in
/// unspecialized generic code, where a `TypedIdentity` would cost a metadata look-up).
@usableFromInline
struct ErasedIdentity: DeclaredIdentity {
    @usableFromInline let erased: any Hashable & Sendable

    @inlinable
    init(_ erased: any Hashable & Sendable) { self.erased = erased }

    @inlinable
    func equals(_ stored: any Hashable & Sendable) -> Bool { identitiesEqual(stored, erased) }
}
