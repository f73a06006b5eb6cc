import UVLoop

#if Logging
    import Logging
#endif

/// Where a registry reports what it would otherwise swallow: a declaration dropped because its
/// loop refused a timer, calls that could not reach a loop that has shut down, a phase stream
/// ended at once, a run that failed. With the `Logging` trait it writes to the swift-log
/// `Logger` given to `TaskRegistry(loop:logger:)`, at `debug` for what a caller may need to
/// know and `trace` for the ordinary (a failed run is also in its phase). Without the trait, or
/// without a logger, it does nothing and costs nothing.
///
/// Following swift-log's guidance for libraries: nothing above `debug`, since the caller also
/// sees every one of these through a thrown error, a phase or a counter.
///
/// Immutable; may be used on any thread.
struct RegistryLog: Sendable {
    #if Logging
        let logger: Logger?

        init(logger: Logger? = nil) { self.logger = logger }
    #else
        init() {}
    #endif

    /// Something a caller may need to know, such as work dropped because a loop shut down.
    @inline(__always)
    func debug(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.debug("\(message())")
        #endif
    }

    /// Something ordinary that is reported elsewhere too, such as a failed run.
    @inline(__always)
    func trace(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.trace("\(message())")
        #endif
    }
}

#if Logging
    extension TaskRegistry {
        /// Creates an empty registry on `loop` that logs to `logger` what it would otherwise
        /// swallow (see the README's "Logging, metrics and services"), at `debug` and `trace`
        /// level only.
        ///
        /// May be called from any thread.
        public convenience init(loop: any TaskLoop, logger: Logger) {
            self.init(loop: loop, log: RegistryLog(logger: logger))
        }

        /// The logger given at creation, if any.
        ///
        /// May be read from any thread.
        public var logger: Logger? { core.log.logger }
    }
#endif
