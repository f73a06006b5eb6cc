#if ServiceLifecycle
    import ServiceLifecycle

    /// A registry as a swift-service-lifecycle `Service`: `run()` waits for the group's graceful
    /// shutdown, then shuts the registry down (every task cancelled, phase
    /// `cancelled(.registryShutDown)`; with `RegistryConfiguration.shutdownGracePeriod`, runs under
    /// way get that long to finish first: `shutdown(gracePeriod:)`) and returns once every action
    /// has ended. List it in the `ServiceGroup` after the loops' group, so that it stops before them.
    extension TaskRegistry: Service {
        /// Runs until graceful shutdown (or cancellation), then shuts the registry down.
        ///
        /// - Note: Called by the `ServiceGroup`, from any task.
        public func run() async throws {
            // Returns when graceful shutdown is triggered; throws if the task is cancelled
            // first, and either way the registry must shut down.
            try? await gracefulShutdown()
            if let grace = configuration.shutdownGracePeriod {
                await shutdown(gracePeriod: grace)
            } else {
                await shutdown()
            }
        }
    }

    /// A sharded registry as a `Service`, like `TaskRegistry`'s.
    extension ShardedTaskRegistry: Service {
        /// Runs until graceful shutdown (or cancellation), then shuts every shard down (with the
        /// shards' `shutdownGracePeriod`, if they have one).
        ///
        /// - Note: Called by the `ServiceGroup`, from any task.
        public func run() async throws {
            try? await gracefulShutdown()
            if let grace = shards.first?.configuration.shutdownGracePeriod {
                await shutdown(gracePeriod: grace)
            } else {
                await shutdown()
            }
        }
    }
#endif
