#if Logging
    import Logging
#endif

/// Where a `UVLoop` reports its life and what it would otherwise swallow: its start and
/// shutdown, libuv errors that reach no caller (a failed accept with nobody accepting, a
/// refused `uv_async_send`, a failed `TCP_NODELAY`), and handles still open when the loop closes. With
/// the `Logging` trait it writes to the swift-log `Logger` given to `UVLoop(name:logger:)`;
/// without the trait, or without a logger, it does nothing and costs nothing.
///
/// Following swift-log's guidance for libraries: the life of a loop at `debug`; a swallowed
/// libuv error at `debug`; only handles left open at close at `warning`, since nothing else
/// tells anyone unless they read `loopCloseResult`.
///
/// Immutable; may be used on any thread.
struct LoopLog: Sendable {
    #if Logging
        let logger: Logger?

        init(logger: Logger? = nil) { self.logger = logger }
    #else
        init() {}
    #endif

    /// The loop's life, or an error no caller sees.
    @inline(__always)
    func debug(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.debug("\(message())")
        #endif
    }

    /// A defect someone must hear about: resources the loop could not release.
    @inline(__always)
    func warning(_ message: @autoclosure () -> String) {
        #if Logging
            logger?.warning("\(message())")
        #endif
    }
}

#if Logging
    extension UVLoop {
        /// Creates a loop that is not running yet and logs to `logger` its start, its shutdown,
        /// libuv errors that reach no caller (at `debug`), and handles still open when it
        /// closes (at `warning`); call `start()`.
        ///
        /// May be called from any thread.
        public convenience init(name: String = "uv-loop", logger: Logger) {
            self.init(name: name, log: LoopLog(logger: logger))
        }

        /// The logger given at creation, if any.
        ///
        /// May be read from any thread.
        public var logger: Logger? { log.logger }
    }

    extension UVLoopGroup {
        /// Starts `count` loops, each logging to `logger` (see `UVLoop(name:logger:)`).
        ///
        /// - Throws: `LoopError` if a loop cannot start (the ones already started are shut
        ///   down), or `LoopError.libuv(UV_EINVAL)` for a count below 1.
        /// - Note: May be called from any thread.
        public convenience init(loops count: Int, namePrefix: String = "uv-loop", logger: Logger) throws(LoopError) {
            try self.init(loops: count, namePrefix: namePrefix, log: LoopLog(logger: logger))
        }
    }
#endif
