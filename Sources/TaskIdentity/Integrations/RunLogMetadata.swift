#if Logging
    import Logging

    extension Logger.MetadataProvider {
        /// Puts which run a log line was written in into its metadata: the slot's key
        /// (`task.key`), the task's name (`task.name`) and the run's generation
        /// (`task.generation`), for every line written inside a registry's run (its action, and
        /// the child tasks and unstructured tasks it makes, which inherit the run), with no
        /// logger passed in. Outside every run it adds nothing. Trait `Logging`.
        ///
        /// ```swift
        /// LoggingSystem.bootstrap(StreamLogHandler.standardOutput, metadataProvider: .taskIdentity)
        /// // or, for one logger:
        /// let logger = Logger(label: "search", metadataProvider: .taskIdentity)
        /// ```
        ///
        /// Read from the task-local the registry binds around each run's action: a synchronous
        /// template's action, which runs outside any Swift task, has none.
        ///
        /// May be used on any thread (it reads only the run's immutable key, name and
        /// generation).
        public static var taskIdentity: Logger.MetadataProvider {
            Logger.MetadataProvider {
                guard let run = CurrentRun.marker else { return [:] }
                return [
                    "task.key": "\(run.record.traceKey)",
                    "task.name": "\(run.record.name)",
                    "task.generation": "\(run.generation)",
                ]
            }
        }
    }
#endif
