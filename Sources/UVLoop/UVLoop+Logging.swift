#if Logging
    import Logging
#endif

// What a `UVLoop` reports through its `LibraryLog`: its start and shutdown, libuv errors that
// reach no caller (a failed accept with nobody accepting, a refused `uv_async_send`, a failed
// `TCP_NODELAY`) at `debug`, and handles still open when the loop closes at `warning`, since
// nothing else tells anyone unless they read `loopCloseResult`.

#if Logging
    extension UVLoop {
        /// Creates a loop that is not running yet and logs to `logger` its start, its shutdown,
        /// libuv errors that reach no caller (at `debug`), and handles still open when it
        /// closes (at `warning`); call `start()`.
        ///
        /// May be called from any thread.
        public convenience init(name: String = "uv-loop", logger: Logger) {
            self.init(name: name, log: LibraryLog(logger: logger))
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
            try self.init(loops: count, namePrefix: namePrefix, log: LibraryLog(logger: logger))
        }
    }
#endif
