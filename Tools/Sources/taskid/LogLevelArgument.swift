import ArgumentParser
import Logging

/// `--log-level`: swift-log's levels by their names. Its own type, so that `Logger.Level` (of
/// another package) need not conform retroactively to `ExpressibleByArgument` (of a third).
/// A value type; any thread.
enum LogLevelArgument: String, CaseIterable, ExpressibleByArgument, Sendable {
    case trace, debug, info, notice, warning, error, critical

    /// The swift-log level of the same name.
    var level: Logger.Level { Logger.Level(rawValue: rawValue)! }
}
