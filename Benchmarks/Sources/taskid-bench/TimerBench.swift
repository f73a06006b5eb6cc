import ArgumentParser
import Dispatch
import UVLoop

/// Timer re-arms per second on the loop thread: `UVTimer.start(after:)` over many timers, the
/// same shape as the C floor's W2 run (`churn-c SLOTS CHANGES 50 BATCH`).
struct TimerBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "timers", abstract: "Timer re-arms per second through UVTimer.")

    @Option(help: "Number of timers.") var timers = 10_000
    @Option(help: "Total re-arms.") var rearms = 10_000_000
    @Option(name: .customLong("debounce-ms"), help: "Delay each re-arm sets.") var delayMilliseconds = 50
    @Flag(help: "Print JSON instead of a key=value line.") var json = false

    func validate() throws {
        guard timers > 0, rearms > 0, delayMilliseconds >= 0 else {
            throw ValidationError("--timers, --rearms must be positive and --debounce-ms not negative")
        }
    }

    func run() throws {
        let loop = UVLoop(name: "bench")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let (timerCount, rearmCount, delay) = (timers, rearms, Duration.milliseconds(delayMilliseconds))
        let seconds = try blockOn {
            try await loop.submit { () -> Double in
                let fired = LoopCounter(target: Int.max)
                var handles: [UVTimer] = []
                handles.reserveCapacity(timerCount)
                for _ in 0..<timerCount { handles.append(try loop.makeUVTimer { fired.increment() }) }
                var x: UInt64 = 88_172_645_463_325_252
                let start = monotonicNanoseconds()
                for _ in 0..<rearmCount {
                    x ^= x << 13
                    x ^= x >> 7
                    x ^= x << 17
                    try handles[Int(x % UInt64(timerCount))].start(after: delay)
                }
                let elapsed = Double(monotonicNanoseconds() - start) / 1e9
                for handle in handles { handle.close() }
                return elapsed
            }
        }
        var line = RunReport()
        line.add("impl", "uvtimer")
        line.add("timers", timers)
        line.add("rearms", rearms)
        line.add("seconds", seconds, decimals: 4)
        line.add("rearms_per_s", Int(Double(rearms) / seconds))
        print(line.line(json: json))
    }
}
