#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The causal link of the observed run whose identity closure is being evaluated on the calling
/// thread now, outside any task of the run's. Observation reports a write in the writer's
/// context, so a write the closure makes is known to be that run's.
///
/// A thread-local word, set and restored around the evaluation, instead of binding the
/// task-local `ObservedRun.current`: outside a task, a task-local binding allocates its entry
/// with malloc (about 650 instructions per evaluation on W7), where this costs two
/// `pthread_setspecific`. A task created inside the closure does not inherit it: an identity
/// closure must be a function of the state it reads, with no side effects. (Synchronous actions
/// and posted commits, which may create tasks, bind the task-local instead.)
///
/// May be used from any thread; each thread sees its own.
enum SynchronousCause {
    /// The slot, made once per process. No destructor: the word never owns a reference.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// Runs `body` with `run` as the calling thread's synchronous cause, then restores the one
    /// before (causes nest: an identity closure that declares another observed task).
    ///
    /// Any thread; the word is the calling thread's.
    @inline(__always)
    static func withCause<Result>(_ run: ObservedRun, _ body: () throws -> Result) rethrows -> Result {
        let previous = pthread_getspecific(key)
        // Unretained: `run` is alive for the whole call (`withExtendedLifetime`), and the word
        // is restored before the call returns, so no read can outlive the reference
        // (docs/safety.md; `ObservationTests` runs under AddressSanitizer).
        pthread_setspecific(key, Unmanaged.passUnretained(run).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return try withExtendedLifetime(run) { try body() }
    }

    /// The calling thread's synchronous cause, if an identity evaluation is running on it now.
    /// Any thread.
    static var current: ObservedRun? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        // Unretained: the word is non-nil only inside `withCause` on this thread, which keeps
        // the run alive until it restores the word.
        return Unmanaged<ObservedRun>.fromOpaque(pointer).takeUnretainedValue()
    }
}

extension ObservedRun {
    /// The run whose code is writing here, if it is an observed run's: the synchronous cause of
    /// this thread first (the innermost: an evaluation inside a run's action belongs to the
    /// evaluation), else the task-local link of the current task.
    ///
    /// May be called from any thread.
    static var causeHere: ObservedRun? {
        SynchronousCause.current ?? ObservedRun.current
    }
}
