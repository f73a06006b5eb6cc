/// How an observed identity hears that a property it read has changed.
///
/// Observation reports a write twice, around the store: before it (`willSet`, its public
/// `withObservationTracking(_:onChange:)`) and after it (`didSet`, through the underscored
/// interface it keeps for SwiftUI, with no stability promise). The registry re-evaluates on
/// the loop thread, a hop after the report:
///
/// - `didSet` (the default, where the toolchain has the interface): the re-evaluation reads
///   every write stored, from any thread.
/// - `willSetAndHop` (the package trait `PublicObservation`, for a toolchain without it; the
///   public interface only): the re-evaluation is a loop turn after the report, so it reads a
///   write made on the loop thread after its store, as `didSet` does. A write made on another
///   thread may be read before it is stored, and is then seen only with the next write of a
///   property the identity reads.
///
/// Both keep the writer's causal link (the report comes on the writer's thread, inside its
/// run), so cycle detection is the same. Loop-confined, immutable per registry.
enum ObservationMechanism: CaseIterable, Sendable {
    #if !PublicObservation
        case didSet
    #endif
    case willSetAndHop

    /// `didSet` where the toolchain's interface is built in, `willSetAndHop` otherwise.
    static var `default`: ObservationMechanism {
        #if PublicObservation
            .willSetAndHop
        #else
            .didSet
        #endif
    }
}
