import CLibUV

/// A libuv handle type that a Swift object of this module owns (`UVTimer`, `SignalWatcher`,
/// `TCPSocket`): how to initialise one and how to see it as libuv's `uv_handle_t`.
protocol UVHandleType {
    /// The init function's name, for errors.
    static var initFunctionName: String { get }

    /// `uv_<type>_init(loop, handle)`: 0 or a negative libuv error.
    static func initialise(_ handle: UnsafeMutablePointer<Self>, on loop: UnsafeMutablePointer<uv_loop_t>) -> Int32

    /// The handle as its `uv_handle_t` prefix (libuv's layout; the C shim does the cast).
    static func base(of handle: UnsafeMutablePointer<Self>) -> UnsafeMutablePointer<uv_handle_t>
}

extension uv_timer_t: UVHandleType {
    static var initFunctionName: String { "uv_timer_init" }
    static func initialise(_ handle: UnsafeMutablePointer<Self>, on loop: UnsafeMutablePointer<uv_loop_t>) -> Int32 {
        uv_timer_init(loop, handle)
    }
    static func base(of handle: UnsafeMutablePointer<Self>) -> UnsafeMutablePointer<uv_handle_t> {
        clibuv_timer_as_handle(handle)
    }
}

extension uv_signal_t: UVHandleType {
    static var initFunctionName: String { "uv_signal_init" }
    static func initialise(_ handle: UnsafeMutablePointer<Self>, on loop: UnsafeMutablePointer<uv_loop_t>) -> Int32 {
        uv_signal_init(loop, handle)
    }
    static func base(of handle: UnsafeMutablePointer<Self>) -> UnsafeMutablePointer<uv_handle_t> {
        clibuv_signal_as_handle(handle)
    }
}

extension uv_tcp_t: UVHandleType {
    static var initFunctionName: String { "uv_tcp_init" }
    static func initialise(_ handle: UnsafeMutablePointer<Self>, on loop: UnsafeMutablePointer<uv_loop_t>) -> Int32 {
        uv_tcp_init(loop, handle)
    }
    static func base(of handle: UnsafeMutablePointer<Self>) -> UnsafeMutablePointer<uv_handle_t> {
        clibuv_tcp_as_handle(handle)
    }
}

/// The life of a handle owned by a Swift object, written once for every handle type:
///
/// 1. `open` allocates the handle at a stable address (libuv needs one until its close
///    callback), initialises it on the loop and counts it among the loop's live handles;
/// 2. `attach` points its `data` at the owner, unretained: the owner detaches it (`close`)
///    before it can go away, and every callback finds its owner through `owner(_:of:)`, which
///    answers nil once the handle is closing;
/// 3. `close` clears `data` and hands the handle to `uv_close`; its close callback frees the
///    memory and counts the handle freed.
///
/// Loop thread only.
enum UVHandle {
    /// Allocates and initialises a `Handle` on `loop`, with no owner yet (`data` nil).
    ///
    /// - Throws: `LoopError` `.calledOffLoopThread` off the loop thread, `.shutDown` once the
    ///   loop's shutdown has begun (both naming `operation`), or the init function's error.
    /// - Note: Loop thread only: that is what it checks first.
    static func open<Handle: UVHandleType>(
        _: Handle.Type, on loop: UVLoop, operation: String
    ) throws(LoopError) -> UnsafeMutablePointer<Handle> {
        guard loop.inLoop else { throw LoopError(.calledOffLoopThread, operation: operation) }
        guard loop.acceptsNewHandles else { throw LoopError(.shutDown, operation: operation) }
        // Raw memory, freed raw by the close callback, which does not know the handle's type.
        let handle = UnsafeMutableRawPointer.allocate(
            byteCount: MemoryLayout<Handle>.size, alignment: MemoryLayout<Handle>.alignment
        ).bindMemory(to: Handle.self, capacity: 1)
        let result = Handle.initialise(handle, on: loop.uvLoop)
        if result < 0 {
            UnsafeMutableRawPointer(handle).deallocate()
            throw LoopError(.libuv(result), operation: Handle.initFunctionName)
        }
        // libuv never touches `data`, so it holds whatever the allocation held until attached.
        Handle.base(of: handle).pointee.data = nil
        loop.handleOpened()
        return handle
    }

    /// Makes `owner` the handle's owner, found by its callbacks. Loop thread only.
    static func attach<Handle: UVHandleType>(_ owner: AnyObject, to handle: UnsafeMutablePointer<Handle>) {
        // Unretained: the owner closes the handle (`close`, at the latest in its deinit), which
        // clears `data`, before it can go away.
        Handle.base(of: handle).pointee.data = Unmanaged.passUnretained(owner).toOpaque()
    }

    /// Detaches the handle from its owner and closes it; the memory is freed in the close
    /// callback. Call once per handle. Loop thread only.
    static func close<Handle: UVHandleType>(_ handle: UnsafeMutablePointer<Handle>) {
        let base = Handle.base(of: handle)
        base.pointee.data = nil
        uv_close(base, uvHandleClosed)
    }

    /// The owner of a handle, from the handle's `data`: nil once the handle is closing.
    /// `Owner` must be the type `attach` was given. Loop thread only (in a libuv callback).
    @inline(__always)
    static func owner<Owner: AnyObject>(_: Owner.Type, of data: UnsafeMutableRawPointer?) -> Owner? {
        guard let data else { return nil }
        // Unretained, and sound: `data` is set by `attach` and cleared by `close`, which the
        // owner runs before it goes (at the latest in its deinit), so while set its owner is alive.
        return Unmanaged<Owner>.fromOpaque(data).takeUnretainedValue()
    }

    /// The `UVLoop` running a libuv loop. Loop thread only (in a libuv callback).
    @inline(__always)
    static func loop(of uvLoop: UnsafeMutablePointer<uv_loop_t>) -> UVLoop {
        // Unretained: the uv_loop_t's data is its UVLoop (set by start()); callbacks run inside
        // uv_run on the loop thread, which holds the loop retained until after uv_loop_close.
        Unmanaged<UVLoop>.fromOpaque(uvLoop.pointee.data).takeUnretainedValue()
    }
}

/// Frees a handle `UVHandle.close` closed and counts it freed.
private let uvHandleClosed: uv_close_cb = { handle in
    let loop = UVHandle.loop(of: handle!.pointee.loop)
    // Allocated raw by `UVHandle.open`; a libuv handle is plain C data, nothing to deinitialise.
    UnsafeMutableRawPointer(handle!).deallocate()
    loop.handleFreed()
}
