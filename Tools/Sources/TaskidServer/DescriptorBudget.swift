#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many clients fit the process's open-files limit (`RLIMIT_NOFILE`), as Redis sizes
/// `maxclients`: the soft limit is raised toward the hard one when that is allowed, and when
/// the clients and the server's own descriptors still do not fit, fewer clients are served, so
/// that a client past the limit is always answered `-ERR max number of clients reached`
/// rather than accepted and closed for want of a descriptor. A value type; any thread.
package struct DescriptorBudget: Equatable {
    /// The open-files limit to run with.
    package var softLimit: Int
    /// The clients served at once.
    package var maxClients: Int

    /// Descriptors the server needs besides its clients: the loops, the listener, logs, the
    /// refusals under way, and `--work upstream:`'s connections when it has them.
    package static func reserved(for configuration: ServerConfiguration) -> Int {
        var reserved = 32 + RegistryServer.refusalsAtOnce + 4 * configuration.loops
        if case .upstream = configuration.work { reserved += configuration.upstreamMaxConnections }
        return reserved
    }

    /// The budget for `maxClients` clients and `reserved` descriptors, under a soft limit
    /// `soft` that may be raised to `hard`. `maxClients` is 0 when not even one client fits.
    package static func fitting(maxClients: Int, reserved: Int, soft: Int, hard: Int) -> DescriptorBudget {
        let wanted = maxClients + reserved
        let limit = wanted <= soft ? soft : min(wanted, max(soft, hard))
        return DescriptorBudget(softLimit: limit, maxClients: max(0, min(maxClients, limit - reserved)))
    }

    /// Applies the budget for `configuration` to this process: raises the soft limit if it
    /// must and may, and returns the clients that fit, with a warning to log when that is fewer
    /// than asked. Any thread, before the server starts.
    package static func apply(to configuration: ServerConfiguration) -> (maxClients: Int, warning: String?) {
        var limits = rlimit()
        guard getrlimit(Self.openFiles, &limits) == 0 else { return (configuration.maxClients, nil) }
        // RLIM_INFINITY is larger than any count of clients: treated as Int.max.
        let soft = limits.rlim_cur >= UInt64(Int.max) ? Int.max : Int(limits.rlim_cur)
        let hard = limits.rlim_max >= UInt64(Int.max) ? Int.max : Int(limits.rlim_max)
        let reserved = reserved(for: configuration)
        var budget = fitting(maxClients: configuration.maxClients, reserved: reserved, soft: soft, hard: hard)
        if budget.softLimit != soft {
            limits.rlim_cur = rlim_t(budget.softLimit)
            if setrlimit(Self.openFiles, &limits) != 0 {
                budget = fitting(maxClients: configuration.maxClients, reserved: reserved, soft: soft, hard: soft)
            }
        }
        guard budget.maxClients < configuration.maxClients else { return (budget.maxClients, nil) }
        let warning =
            "--max-clients lowered from \(configuration.maxClients) to \(budget.maxClients): the open-files "
            + "limit is \(budget.softLimit) (hard limit \(hard == Int.max ? "unlimited" : "\(hard)")), and the "
            + "server keeps \(reserved) descriptors for itself; raise it with ulimit -n"
        return (budget.maxClients, warning)
    }

    #if canImport(Glibc)
        private static let openFiles = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
        private static let openFiles = RLIMIT_NOFILE
    #endif
}
