/// The one error type of the loop layer: a failure of the loop's engine (for `UVLoop`, libuv's
/// code, name and message) or a lifecycle mistake such as using a loop that has shut down.
///
/// Values are immutable and may be passed between threads.
public struct LoopError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, as a small set of stable codes that can be matched on.
    ///
    /// May be used from any thread.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: Hashable, Sendable {
            /// libuv's code, with its name (`uv_err_name`) and message (`uv_strerror`) read
            /// when the error was made, so that this module needs no C. Two codes are equal by
            /// their number alone.
            case libuv(Int32, LibuvText)
            case notStarted
            case alreadyStarted
            case shutDown
            case handleClosed
            case calledOnLoopThread
            case calledOffLoopThread
        }
        fileprivate let base: Base

        /// A libuv failure with its negative code, name and message. `UVLoop` makes these, as
        /// `LoopError.Code.libuv(_:)`, which reads the name and message from libuv.
        package static func libuv(_ code: Int32, name: String, message: String) -> Code {
            Code(base: .libuv(code, LibuvText(name: name, message: message)))
        }
        /// The loop has not been started yet; call `start()` first.
        public static let notStarted = Code(base: .notStarted)
        /// `start()` was called on a loop that is already running or has run.
        public static let alreadyStarted = Code(base: .alreadyStarted)
        /// The loop has shut down (or is shutting down) and accepts no new work.
        public static let shutDown = Code(base: .shutDown)
        /// The timer or handle was closed (by `close()` or by the loop's shutdown).
        public static let handleClosed = Code(base: .handleClosed)
        /// The operation blocks until the loop thread exits, so the loop thread may not call it.
        public static let calledOnLoopThread = Code(base: .calledOnLoopThread)
        /// The operation touches loop-owned state and must be called on the loop thread.
        public static let calledOffLoopThread = Code(base: .calledOffLoopThread)

        /// A short, stable name for the code, e.g. `shutDown` or `libuv(EINVAL)`.
        public var description: String {
            switch base {
            case .libuv(_, let text): return "libuv(\(text.name))"
            case .notStarted: return "notStarted"
            case .alreadyStarted: return "alreadyStarted"
            case .shutDown: return "shutDown"
            case .handleClosed: return "handleClosed"
            case .calledOnLoopThread: return "calledOnLoopThread"
            case .calledOffLoopThread: return "calledOffLoopThread"
            }
        }
    }

    /// What went wrong.
    public let code: Code
    /// The operation that failed, such as `uv_timer_init` or `UVLoop.execute`.
    public let operation: String

    /// Creates an error; the library creates these, users normally only match on them.
    ///
    /// May be called from any thread.
    public init(_ code: Code, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// libuv's negative error code when the failure came from libuv, otherwise `nil`.
    public var libuvCode: Int32? {
        if case .libuv(let value, _) = code.base { return value }
        return nil
    }

    /// libuv's symbolic name for the failure (`uv_err_name`, e.g. `EADDRINUSE`), if it came from libuv.
    public var libuvName: String? {
        if case .libuv(_, let text) = code.base { return text.name }
        return nil
    }

    /// libuv's human-readable message (`uv_strerror`), if the failure came from libuv.
    public var libuvMessage: String? {
        if case .libuv(_, let text) = code.base { return text.message }
        return nil
    }

    /// `operation: name (message)` for libuv failures, `operation: code` for the others.
    public var description: String {
        if let name = libuvName, let message = libuvMessage {
            return "\(operation): \(name) (\(message))"
        }
        return "\(operation): \(code)"
    }
}

/// The words libuv gives a code, kept beside it. Not part of a code's identity: equal codes
/// are equal whatever text was read for them.
struct LibuvText: Hashable, Sendable {
    let name: String
    let message: String

    static func == (lhs: LibuvText, rhs: LibuvText) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
