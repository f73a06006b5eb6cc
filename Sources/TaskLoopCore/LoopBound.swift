/// A value confined to a loop's thread, carried where Swift requires `Sendable` (an action, a
/// closure posted to the loop) and checked on each access: reading or writing `value` off the
/// loop thread traps, instead of racing.
///
/// For loop-confined state that actions reach, such as an `@Observable` model whose
/// properties a task's identity tracks:
///
/// ```swift
/// let model = LoopBound(ImageModel(), loop: loop)     // on the loop thread
/// try registry.task("avatar", tracking: { model.value.url }) { url, context in
///     let image = try await fetchImage(url)
///     context.commit { model.value.image = image }     // commit runs on the loop thread
/// }
/// ```
///
/// May be created and passed on any thread; `value` is loop thread only.
public final class LoopBound<Value>: @unchecked Sendable {
    // @unchecked Sendable: `storage` is reached only through `value`, which checks the loop
    // thread on every access (`LoopBoundTests` checks that an access off the loop traps).
    private var storage: Value
    /// The loop whose thread owns the value. May be read from any thread.
    public let loop: any TaskLoop

    /// Binds `value` to `loop`. `sending`: the caller hands it over, so nothing else keeps it.
    ///
    /// May be called from any thread.
    public init(_ value: sending Value, loop: any TaskLoop) {
        self.storage = value
        self.loop = loop
    }

    /// The value. Loop thread only: traps elsewhere.
    public var value: Value {
        get {
            loop.preconditionInLoop()
            return storage
        }
        _modify {
            loop.preconditionInLoop()
            yield &storage
        }
        set {
            loop.preconditionInLoop()
            storage = newValue
        }
    }
}
