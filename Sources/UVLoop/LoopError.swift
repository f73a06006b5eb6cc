import CLibUV

extension LoopError.Code {
    /// libuv returned the given negative error code (for example `UV_EINVAL`); the error
    /// carries libuv's name and message for it.
    ///
    /// May be called from any thread.
    public static func libuv(_ code: Int32) -> LoopError.Code {
        .libuv(code, name: LoopError.name(ofLibuvCode: code), message: String(cString: uv_strerror(code)))
    }
}

extension LoopError {
    /// libuv's name for `code` (`uv_err_name`, e.g. `EINVAL`).
    static func name(ofLibuvCode code: Int32) -> String { String(cString: uv_err_name(code)) }

    /// Converts a libuv return value into a thrown error when it is negative.
    @inlinable
    static func check(_ result: Int32, _ operation: @autoclosure () -> String) throws(LoopError) {
        if result < 0 { throw LoopError(.libuv(result), operation: operation()) }
    }
}
