import Testing
import UVLoop

@testable import TaskIdentity

/// `TraceReplay`: a recorded trace declared again in virtual time, under its own settings and
/// under others.
@Suite("Replaying a trace")
struct TraceReplayTests {
    /// The backend time of `query`: 20 to 59 ms, fixed per query.
    static func backendMilliseconds(_ query: String) -> Int {
        20 + query.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF } % 40
    }

    /// Typeahead traffic on a test loop: `sessions` sessions, each typing bursts of letters
    /// 30 to 120 ms apart with pauses between bursts, searched under `debounce` (and `limit`),
    /// recorded from the start.
    static func record(
        sessions: Int = 20, seconds: Int = 8, debounce: Duration = .milliseconds(50), limit: Int? = nil
    ) throws -> RegistryTrace {
        var configuration = RegistryConfiguration()
        configuration.traceCapacity = 1 << 20
        let loop = TestLoop()
        let registry = try TaskRegistry<String>(loop: loop, configuration: configuration)
        let concurrencyLimit = try limit.map { count throws(RegistryError) in try ConcurrencyLimit(maxRunning: count) }
        var random = SplitMix64(state: 7)
        // Each session's next keystroke time and its query so far.
        var next = (0..<sessions).map { _ in UInt64(random.below(500)) * 1_000_000 }
        var queries = Array(repeating: "", count: sessions)
        let end = UInt64(seconds) * 1_000_000_000
        while let (session, time) = next.enumerated().min(by: { $0.element < $1.element }).map({
            ($0.offset, $0.element)
        }),
            time < end
        {
            loop.advance(to: LoopInstant(nanoseconds: time))
            if queries[session].count >= 6 || random.below(8) == 0 { queries[session] = "" }
            queries[session].append(Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8(random.below(26)))))
            let query = queries[session]
            try registry.task("session-\(session)", id: query, debounce: debounce, limit: concurrencyLimit) { context in
                try await context.clock.sleep(for: .milliseconds(Self.backendMilliseconds(query)))
                context.commit {}
            }
            // Mostly 30-120 ms between letters; now and then a pause of a second or two.
            let gap = random.below(10) == 0 ? 1_000 + random.below(1_000) : 30 + random.below(90)
            next[session] = time + UInt64(gap) * 1_000_000
        }
        loop.advance(by: .seconds(1))
        let trace = try registry.stopTrace()!
        registry.startShutdown()
        loop.run()
        loop.shutdown()
        return trace
    }

    /// The typing traffic, recorded once for the tests that read it (each replays it anew).
    static let typing = Result { try record() }

    @Test func withTheRecordedSettingsTheReplayMatchesTheTrace() throws {
        let trace = try Self.typing.get()
        let replay = try TraceReplay(json: trace.json())
        #expect(replay.recordedSettings.debounce == .milliseconds(50))
        #expect(replay.recordedSettings.maxRunning == nil && replay.recordedSettings.throttle == .zero)
        let recorded = replay.recordedFigures
        #expect(recorded.backendCalls > 100 && recorded.wastedCalls > 0, "a trace with bursts: \(recorded)")
        let again = try replay.replay(with: replay.recordedSettings)
        #expect(again.declarations == recorded.declarations)
        #expect(again.backendCalls == recorded.backendCalls)
        #expect(again.answers == recorded.answers)
        #expect(again.answerP50 == recorded.answerP50 && again.answerP99 == recorded.answerP99)
        #expect(again.peakRunning == recorded.peakRunning)
        // The same from the trace value as from its JSON.
        #expect(TraceReplay(trace: trace).recordedFigures == recorded)
    }

    /// A live loop closes its windows a little late; the replay reads by how much (the median
    /// over windows closed by their timer, not those that gave way early) and closes its own
    /// that much later. A trace in virtual time shows none.
    @Test func theRecordedLoopsTimerLatenessIsReadAndReplayed() throws {
        let text = """
            {"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"k"}},
            {"name":"declared g1","ph":"i","ts":0.000,"pid":1,"tid":1,"args":{"generation":1,"identity":"a"}},
            {"name":"debounce","cat":"window","ph":"b","id":1,"ts":0.000,"pid":1,"tid":1,"args":{"generation":1,"until_us":50000.000}},
            {"name":"debounce","cat":"window","ph":"e","id":1,"ts":51000.000,"pid":1,"tid":1},
            {"name":"declared g2","ph":"i","ts":100000.000,"pid":1,"tid":1,"args":{"generation":2,"identity":"b"}},
            {"name":"debounce","cat":"window","ph":"b","id":2,"ts":100000.000,"pid":1,"tid":1,"args":{"generation":2,"until_us":150000.000}},
            {"name":"debounce","cat":"window","ph":"e","id":2,"ts":120000.000,"pid":1,"tid":1}]}
            """
        let replay = try TraceReplay(json: text)
        #expect(replay.recordedTimerLateness == .milliseconds(1))
        #expect(replay.recordedSettings.debounce == .milliseconds(50))
        #expect(TraceReplay(trace: try Self.typing.get()).recordedTimerLateness == .zero)
    }

    @Test func doublingTheDebounceMakesFewerBackendCalls() throws {
        let replay = TraceReplay(trace: try Self.typing.get())
        var settings = replay.recordedSettings
        let recorded = try replay.replay(with: settings)
        settings.debounce = settings.debounce * 2
        let doubled = try replay.replay(with: settings)
        #expect(doubled.backendCalls < recorded.backendCalls)
        #expect(doubled.wastedCalls < recorded.wastedCalls)
        #expect(doubled.answerP50 > recorded.answerP50, "a longer wait for each answer")
        // A fixed backend time replaces the recorded ones.
        settings.backend = .fixed(.milliseconds(1))
        #expect(try replay.replay(with: settings).wastedCalls < doubled.wastedCalls)
    }

    @Test func aLimitIsReadFromATraceWhoseRunsQueuedAndReplayedUnderIt() throws {
        let replay = TraceReplay(trace: try Self.record(debounce: .zero, limit: 3))
        #expect(replay.recordedSettings.maxRunning == 3)
        #expect(replay.recordedFigures.peakRunning == 3)
        let again = try replay.replay(with: replay.recordedSettings)
        #expect(again.peakRunning == 3 && again.backendCalls == replay.recordedFigures.backendCalls)
        var unlimited = replay.recordedSettings
        unlimited.maxRunning = nil
        #expect(try replay.replay(with: unlimited).peakRunning > 3)
    }

    @Test(arguments: [
        ("", "expected '{'"), ("{\"traceEvents\":[{\"ph\":1}]}", "expected a string"),
        ("{\"traceEvents\":[{\"ts\":-4}]}", "expected a non-negative number"),
        ("{\"traceEvents\":[{\"name\":\"x", "unterminated string"),
    ])
    func textThatIsNotATraceIsRefusedWithWhereItStopped(text: String, message: String) {
        #expect(throws: TraceReplayError.self) { try TraceReplay(json: text) }
        do {
            _ = try TraceReplay(json: text)
        } catch {
            #expect(error.message == message && error.offset != nil)
        }
    }

    /// Input that could trap a careless reader: a bad surrogate pair, times past 2^64 ns, deep
    /// nesting. Each is refused, never a crash.
    @Test(arguments: [
        (#"{"traceEvents":[{"name":"\uD800\u0041"}]}"#, "a bad surrogate pair"),
        (#"{"traceEvents":[{"ts":18446744073709551.616}]}"#, "a number out of range"),
        (#"{"traceEvents":[{"ts":18446744073709551616}]}"#, "a number out of range"),
        (#"{"traceEvents":[{"other":"# + String(repeating: "[", count: 1_000), "nesting deeper than 64"),
    ])
    func hostileTextIsRefusedNotATrap(text: String, message: String) {
        do {
            _ = try TraceReplay(json: text)
            Issue.record("accepted")
        } catch {
            #expect(error.message == message)
        }
    }

    /// A run cut short with an enormous span: its backend time saturates instead of trapping.
    @Test func anEnormousSpanIsReplayedWithoutATrap() throws {
        let text = """
            {"traceEvents":[{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"k"}},
            {"name":"declared g1","ph":"i","ts":1.000,"pid":1,"tid":1,"args":{"generation":1,"identity":"x"}},
            {"name":"g1 x","cat":"run","ph":"X","ts":1.000,"dur":18446744073709000.000,"pid":1,"tid":1,\
            "args":{"generation":1,"identity":"x","phase":"cancelled(removed)"}}]}
            """
        let replay = try TraceReplay(json: text)
        #expect(replay.recordedFigures.backendCalls == 1 && replay.recordedFigures.answers == 0)
        #expect(try replay.replay(with: TraceReplay.Settings(backend: .fixed(.milliseconds(1)))).answers == 1)
    }

    @Test func aTraceWithNoDeclarationIsRefused() {
        #expect(throws: TraceReplayError(message: "the trace holds no declaration", offset: nil)) {
            try TraceReplay(json: #"{"traceEvents":[],"otherData":{}}"#)
        }
    }

    @Test func badSettingsAreRefused() throws {
        let replay = TraceReplay(trace: try Self.record(sessions: 2, seconds: 1))
        #expect(throws: RegistryError.self) { try replay.replay(with: TraceReplay.Settings(maxRunning: 0)) }
        #expect(throws: RegistryError.self) {
            try replay.replay(with: TraceReplay.Settings(debounce: .milliseconds(-1)))
        }
    }
}
