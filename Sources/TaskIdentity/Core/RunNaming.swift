/// How the registry names its runs' Swift tasks (`RegistryConfiguration.namesRuns`,
/// `runName`), so that debuggers, `swift-inspect` and crash logs say which run a task is.
///
/// Immutable; may be used on any thread (names are made on the loop thread, as runs start).
final class RunNaming: Sendable {
    let custom: (@Sendable (_ key: any Hashable & Sendable, _ identity: any Hashable & Sendable) -> String)?

    /// The naming `configuration` asks for, or nil when runs stay unnamed.
    static func of(_ configuration: RegistryConfiguration) -> RunNaming? {
        guard configuration.namesRuns || configuration.runName != nil else { return nil }
        return RunNaming(custom: configuration.runName)
    }

    private init(custom: (@Sendable (any Hashable & Sendable, any Hashable & Sendable) -> String)?) {
        self.custom = custom
    }

    /// The name of the run `generation` of `record`: the caller's, or `"<task name> <key>#<generation>"`.
    func name(of record: AnyTaskRecord, generation: UInt64) -> String {
        if let custom { return custom(record.traceKey, record.identity) }
        return "\(record.name.rawValue) \(record.traceKey)#\(generation)"
    }
}

extension RegistryCore {
    /// The name of the Swift task of the run `generation` of `record`, or nil when runs are
    /// unnamed (the default: a nil test, then the task is made as before).
    @inline(__always)
    func runTaskName(_ record: AnyTaskRecord, generation: UInt64) -> String? {
        guard let runNaming else { return nil }
        return runNaming.name(of: record, generation: generation)
    }
}
