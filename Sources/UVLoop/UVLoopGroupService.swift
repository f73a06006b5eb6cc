#if ServiceLifecycle
    import ServiceLifecycle

    /// A loop group as a swift-service-lifecycle `Service`: its loops run from its creation;
    /// `run()` waits for the group's graceful shutdown, then shuts every loop down (each closes
    /// its handles and checks `uv_loop_close`) without blocking a thread. List it in the
    /// `ServiceGroup` before the registries on its loops, so that they stop first.
    extension UVLoopGroup: Service {
        /// Runs until graceful shutdown (or cancellation), then shuts every loop down.
        ///
        /// - Note: Called by the `ServiceGroup`, from any task.
        public func run() async throws {
            try? await gracefulShutdown()
            await shutdown()
        }
    }
#endif
