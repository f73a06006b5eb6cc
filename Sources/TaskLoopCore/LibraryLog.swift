#if Logging
    import Logging
#endif

/// Where a loop or a registry reports what it would otherwise swallow. With the `Logging` trait
/// it writes to the swift-log `Logger` it was given; without the trait, or without a logger, it
/// does nothing and costs nothing.
///
/// Following swift-log's guidance for libraries: nothing above `debug`, except a defect someone
/// must hear about (`warning`), since callers also see everything else through a thrown error, a
/// phase or a counter.
///
/// Immutable; may be used on any thread.
package struct LibraryLog: Sendable {
    #if Logging
        package let logger: Logger?

        package init(logger: Logger? = nil) { self.logger = logger }
    #else
        package init() {}
    #endif

    /// Something a caller may need to know, such as work dropped because a loop shut down, or
    /// an error no caller sees.
    @inline(__always)
    package func debug(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.debug("\(message())")
        #endif
    }

    /// Something ordinary that is reported elsewhere too, such as a failed run.
    @inline(__always)
    package func trace(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.trace("\(message())")
        #endif
    }

    /// A defect someone must hear about: resources that could not be released.
    @inline(__always)
    package func warning(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.warning("\(message())")
        #endif
    }
}
