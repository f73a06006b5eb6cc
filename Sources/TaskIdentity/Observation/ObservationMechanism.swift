/// How an observed identity hears that a property it read has changed.
///
/// Observation reports a write twice, around the store: before it (`willSet`, its public
/// `withObservationTracking(_:onChange:)`) and after it (`didSet`, through the underscored
/// interface it keeps for SwiftUI, with no stability promise). The registry re-evaluates on
/// the loop thread, a hop after the report:
///
/// - `willSetAndHop` (the default: the public interface only, so that no toolchain update can
///   break a consumer's build): the re-evaluation is a loop turn after the report, so it reads
///   a write made on the loop thread after its store. A write made on another thread may be
///   read before it is stored, and is then seen only with the next write of a property the
///   identity reads.
/// - `didSet` (the package trait `ObservationSPI`, which imports the underscored interface):
///   the re-evaluation reads every write stored, from any thread.
///
/// Both keep the writer's causal link (the report comes on the writer's thread, inside its
/// run), so cycle detection is the same. Loop-confined, immutable per registry.
enum ObservationMechanism: CaseIterable, Sendable {
    #if ObservationSPI
        case didSet
    #endif
    case willSetAndHop

    /// `didSet` with the `ObservationSPI` trait, `willSetAndHop` otherwise.
    static var `default`: ObservationMechanism {
        #if !ObservationSPI
            .willSetAndHop
        #else
            .didSet
        #endif
    }
}
