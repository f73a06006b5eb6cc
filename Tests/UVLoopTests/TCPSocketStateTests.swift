import CLibUV
import Testing

@testable import UVLoop

/// `TCPSocketState`'s transitions as a table: each row drives a new socket's state through
/// events and states what the socket must do after each one and where it ends. The waiting
/// read is a name (`"r1"`) instead of a continuation, so no socket or task is involved. The
/// expectations are written from the rules in the type's documentation (and from what the
/// seven fields it replaced did), not recorded from the implementation.
@Suite("TCP socket state: reading and closing, event by event")
struct TCPSocketStateTests {
    typealias State = TCPSocketState<String>

    static let eof = Int(UV_EOF.rawValue)
    static let reset = Int(UV_ECONNRESET.rawValue)
    static let noBuffers = Int(UV_ENOBUFS.rawValue)

    /// One event, applied to the state.
    enum Event: CustomStringConvertible {
        /// A read begins: it takes what is ready, or waits (with the waiter `name`).
        case read(String)
        case received(Int)
        case consumed
        case stopReading
        case readAgainAfterStopReading
        case pauseIdleReading
        case readingFailedToStart
        case close(failing: Bool)

        var description: String {
            switch self {
            case .read(let name): "read(\(name))"
            case .received(let count): "received(\(count))"
            case .consumed: "consumed"
            case .stopReading: "stopReading"
            case .readAgainAfterStopReading: "readAgain"
            case .pauseIdleReading: "pauseIdle"
            case .readingFailedToStart: "readStartFailed"
            case .close(let failing): failing ? "close(error)" : "close"
            }
        }

        /// Applies the event; what the socket must do, in words.
        func apply(to state: inout State) -> String {
            switch self {
            case .read(let name):
                if let ready = state.readWithoutWaiting() { return "ready \(ready)" }
                return TCPSocketStateTests.describe(state.readWaits(name))
            case .received(let count): return TCPSocketStateTests.describe(state.received(count))
            case .consumed:
                state.consumed()
                return "-"
            case .stopReading: return TCPSocketStateTests.describe(state.stopReading())
            case .readAgainAfterStopReading:
                state.readAgainAfterStopReading()
                return "-"
            case .pauseIdleReading: return TCPSocketStateTests.describe(state.pauseIdleReading())
            case .readingFailedToStart: return state.libuvReadingFailedToStart().map { "fail \($0)" } ?? "-"
            case .close(let failing):
                guard let action = state.close(reason: failing ? CancellationError() : nil) else {
                    return "already closed"
                }
                return TCPSocketStateTests.describe(action)
            }
        }
    }

    struct Row: CustomTestStringConvertible, Sendable {
        let name: String
        /// Events, each with what the socket must do after it.
        let steps: [(event: Event, action: String)]
        let end: String
        var testDescription: String { name }
    }

    static func describe(_ action: State.ReadAction) -> String {
        switch action {
        case .none: "-"
        case .startLibuvReading: "start"
        case .stopLibuvReading: "stop"
        case .resume(let waiter, let count): "resume \(waiter) \(count)"
        case .fail(let waiter, let error): "fail \(waiter) \(error is CancellationError ? "cancelled" : "\(error)")"
        case .stopLibuvReadingAndResume(let waiter, let count): "stop, resume \(waiter) \(count)"
        case .stopLibuvReadingAndFail(let waiter, let error):
            "stop, fail \(waiter) \(error is CancellationError ? "cancelled" : "libuv \(error)")"
        }
    }

    static func describe(_ state: State) -> String {
        switch state {
        case .open(.idle(let reading)): reading ? "idle, libuv reading" : "idle"
        case .open(.waiting(let waiter)): "waiting \(waiter)"
        case .open(.holding(let count, let taken, let then)): "holding \(count)\(taken ? " taken" : ""), then \(then)"
        case .open(.ended(let code, let byCaller)):
            "ended \(code == eof ? "EOF" : "\(code)")\(byCaller ? " by caller" : "")"
        case .closed(let reason, let unread):
            "closed\(reason == nil ? "" : " with error"), unread chunk \(unread.chunk.map(String.init) ?? "none"), end \(unread.end.map { $0 == eof ? "EOF" : "\($0)" } ?? "none")"
        }
    }

    static let rows: [Row] = [
        Row(
            name: "a read waits, starting libuv's reading; a chunk resumes it; consumed, reading stays on",
            steps: [(.read("r1"), "start"), (.received(100), "resume r1 100"), (.consumed, "-")],
            end: "idle, libuv reading"),
        Row(
            name: "with reading on, the next read waits without starting it again",
            steps: [(.read("r1"), "start"), (.received(5), "resume r1 5"), (.consumed, "-"), (.read("r2"), "-")],
            end: "waiting r2"),
        Row(
            name: "a chunk with no read waiting is held for the next read",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.consumed, "-"), (.received(7), "-"),
                (.read("r2"), "ready 7"),
            ],
            end: "holding 7 taken, then reading"),
        Row(
            name: "refused a buffer while holding: libuv's reading stops, and restarts at the next read",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.received(noBuffers), "stop"),
                (.consumed, "-"), (.read("r2"), "start"),
            ],
            end: "waiting r2"),
        Row(
            name: "nothing this time (0) changes nothing",
            steps: [(.read("r1"), "start"), (.received(0), "-")],
            end: "waiting r1"),
        Row(
            name: "the end of the stream ends the waiting read with 0, and every later read",
            steps: [(.read("r1"), "start"), (.received(eof), "stop, resume r1 0"), (.read("r2"), "ready \(eof)")],
            end: "ended EOF"),
        Row(
            name: "a reset fails the waiting read, and later reads get its code",
            steps: [
                (.read("r1"), "start"),
                (.received(reset), "stop, fail r1 libuv \(LoopError(.libuv(Int32(reset)), operation: "read"))"),
                (.read("r2"), "ready \(reset)"),
            ],
            end: "ended \(reset)"),
        Row(
            name: "an end after a held chunk comes after it",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.consumed, "-"), (.received(9), "-"),
                (.received(eof), "stop"), (.read("r2"), "ready 9"), (.consumed, "-"), (.read("r3"), "ready \(eof)"),
            ],
            end: "ended EOF"),
        Row(
            name: "stopReading ends the waiting read as at the end of the stream",
            steps: [(.read("r1"), "start"), (.stopReading, "stop, resume r1 0"), (.read("r2"), "ready \(eof)")],
            end: "ended EOF by caller"),
        Row(
            name: "stopReading drops a chunk no read took",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.consumed, "-"), (.received(9), "-"),
                (.stopReading, "stop"), (.read("r2"), "ready \(eof)"),
            ],
            end: "ended EOF by caller"),
        Row(
            name: "stopReading before any read stops nothing",
            steps: [(.stopReading, "-"), (.stopReading, "-")],
            end: "ended EOF by caller"),
        Row(
            name: "stopReading after the peer's end keeps the peer's end",
            steps: [(.read("r1"), "start"), (.received(eof), "stop, resume r1 0"), (.stopReading, "-")],
            end: "ended EOF"),
        Row(
            name: "discarding after stopReading reads again; an end of the peer's stays",
            steps: [
                (.stopReading, "-"), (.readAgainAfterStopReading, "-"), (.read("r1"), "start"),
                (.received(eof), "stop, resume r1 0"), (.readAgainAfterStopReading, "-"),
            ],
            end: "ended EOF"),
        Row(
            name: "waiting for a quiet peer pauses libuv's reading, and only when it is on",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.consumed, "-"), (.pauseIdleReading, "stop"),
                (.pauseIdleReading, "-"),
            ],
            end: "idle"),
        Row(
            name: "a failed uv_read_start ends the read and leaves reading off",
            steps: [(.read("r1"), "start"), (.readingFailedToStart, "fail r1"), (.read("r2"), "start")],
            end: "waiting r2"),
        Row(
            name: "close ends the waiting read with the end of the stream; later reads too",
            steps: [
                (.read("r1"), "start"), (.close(failing: false), "stop, resume r1 0"), (.read("r2"), "resume r2 0"),
            ],
            end: "closed, unread chunk none, end none"),
        Row(
            name: "close with a reason fails the waiting read and later reads with it",
            steps: [
                (.read("r1"), "start"), (.close(failing: true), "stop, fail r1 cancelled"),
                (.read("r2"), "fail r2 cancelled"),
            ],
            end: "closed with error, unread chunk none, end none"),
        Row(
            name: "close is final: a second close does nothing, and callbacks change nothing",
            steps: [(.close(failing: false), "-"), (.close(failing: true), "already closed"), (.received(5), "-")],
            end: "closed, unread chunk none, end none"),
        Row(
            name: "after close, a chunk and an end that arrived before it are read first",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.consumed, "-"), (.received(9), "-"),
                (.received(eof), "stop"), (.close(failing: true), "-"), (.read("r2"), "ready 9"), (.consumed, "-"),
                (.read("r3"), "ready \(eof)"),
            ],
            end: "closed with error, unread chunk none, end EOF"),
        Row(
            name: "close while a consumer holds the chunk stops libuv's reading",
            steps: [
                (.read("r1"), "start"), (.received(5), "resume r1 5"), (.close(failing: false), "stop"),
                (.consumed, "-"),
            ],
            end: "closed, unread chunk none, end none"),
    ]

    @Test(arguments: rows)
    func eachRowEndsWhereItsRulesSay(_ row: Row) {
        var state = State()
        for (index, step) in row.steps.enumerated() {
            #expect(step.event.apply(to: &state) == step.action, "step \(index): \(step.event)")
        }
        #expect(Self.describe(state) == row.end)
    }

    @Test func theReadBufferIsRefusedOnlyWhileAChunkIsHeld() {
        var state = State()
        #expect(state.readBufferIsFree)
        _ = state.readWaits("r1")
        #expect(state.readBufferIsFree)
        _ = state.received(5)
        #expect(!state.readBufferIsFree)
        state.consumed()
        #expect(state.readBufferIsFree)
        _ = state.received(6)
        #expect(!state.readBufferIsFree && state.hasUnreadChunk)
    }

    @Test func aSecondReadWhileOneWaitsTraps() async {
        await #expect(processExitsWith: .failure) {
            var state = TCPSocketState<String>()
            _ = state.readWaits("r1")
            _ = state.readWaits("r2")
        }
    }
}
