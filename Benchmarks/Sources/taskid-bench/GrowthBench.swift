import ArgumentParser
import Foundation
import TaskIdentity
import UVLoop

/// Growth: the loop's longest stop while a table grows to many slots. A probe timer asks to
/// fire every millisecond; how late each firing is, is how long the loop was kept from it.
struct GrowthBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "growth",
        abstract: "The loop's longest stall while a registry grows to N slots (a probe timer every millisecond).",
        discussion: """
            Declares new slots, `--batch` a loop turn (so each stop includes one batch's work), each with a waiting debounced task (as W6), \
            while a timer on the same loop asks to fire every millisecond. Prints how late the \
            probe fired: the longest stop, its 99th and 99.9th percentiles. `--impl dictionary` \
            grows a Swift Dictionary of the same keys to objects the same way instead: the table \
            a registry kept its slots in before they grew a bucket at a time.
            """)

    enum Table: String, CaseIterable, ExpressibleByArgument {
        case registry
        case dictionary
        case all
    }

    @Option(help: "Slots to grow to.") var slots = 10_000_000
    @Option(help: "New slots per loop turn (the probe waits for one batch: about 1.5 ms at 500).") var batch = 500
    @Option(help: "registry, dictionary, or all (each in turn, in this process).") var impl = Table.all
    @Flag(help: "Print JSON instead of a key=value line.") var json = false

    func validate() throws {
        guard slots > 0, batch > 0 else { throw ValidationError("--slots and --batch must be positive") }
    }

    func run() throws {
        let tables: [Table] = impl == .all ? [.registry, .dictionary] : [impl]
        for table in tables {
            let before = residentMiB()
            let measurement = Measurement()
            let (probe, after, leftBehind) = try grow(table)
            var report = RunReport()
            report.add("impl", table.rawValue)
            report.add("workload", "growth")
            report.add("slots", slots)
            report.add("batch", batch)
            report.add("seconds", measurement.seconds, decimals: 3)
            report.add("slots_per_s", Int(Double(slots) / measurement.seconds))
            report.add("probes", probe.lateness.count)
            report.add("late_max_ms", probe.percentile(1.0), decimals: 2)
            report.add("late_p999_ms", probe.percentile(0.999), decimals: 2)
            report.add("late_p99_ms", probe.percentile(0.99), decimals: 2)
            report.add("late_max_at_slots", probe.slotsAtLongest)
            // A registry's bytes: the dictionary runs second, in memory the registry freed.
            if table == .registry { report.add("bytes_per_slot", Int((after - before) * 1_048_576 / Double(slots))) }
            report.add("left_behind", leftBehind)
            print(report.line(json: json))
            fflush(nil)
            if leftBehind != 0 { throw CorrectnessFailure(description: "\(table.rawValue): left_behind=\(leftBehind)") }
        }
    }

    /// Grows `table` to `slots` on a loop of its own while the probe runs; returns the probe,
    /// the resident MiB at full size, and what shutdown left behind.
    private func grow(_ table: Table) throws -> (Probe, Double, Int) {
        let loop = UVLoop(name: "growth")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let registry = TaskRegistry<Int>(loop: loop)
        let dictionary = LoopLocal([Int: Marker]())
        let probe = Probe()
        let (count, batch) = (slots, self.batch)
        try runOnLoop(loop) { done in
            let issued = LoopLocal(0)
            probe.slotsNow = { issued.value }
            probe.start(on: loop)
            let turn = TimerBox()
            turn.timer = try! loop.makeUVTimer {
                let end = min(issued.value + batch, count)
                while issued.value < end {
                    let slot = issued.value
                    issued.value += 1
                    switch table {
                    case .registry:
                        // A non-capturing action: the measurement is of the table, not of closures.
                        try! registry.task(slot, id: 1, debounce: .seconds(3600)) { _ in }
                    case .dictionary, .all:
                        dictionary.value[slot] = Marker()
                    }
                }
                if issued.value < count {
                    try! turn.timer!.start(after: .zero)  // the next libuv turn
                } else {
                    turn.timer!.close()
                    turn.timer = nil
                    probe.stop()
                    done()
                }
            }
            try! turn.timer!.start(after: .zero)
        }
        let after = residentMiB()
        try blockOn { await registry.shutdown() }
        let counters = try blockOn { try await loop.submit { try registry.counters } }
        try blockOn { try await loop.submit { dictionary.value = [:] } }
        return (probe, after, counters.runningActions + counters.liveSlots + counters.liveGenerations)
    }
}

/// A dictionary's value, an object as a record is.
private final class Marker {}

/// A timer that asks to fire every millisecond and records how late each firing is. Loop
/// thread only while it runs; read by the driver after `stop`.
private final class Probe: @unchecked Sendable {
    // @unchecked Sendable: started, fired and stopped on the loop thread; read afterwards.
    static let period = Duration.milliseconds(1)
    private var timer: UVTimer?
    private var armedAt: UInt64 = 0
    /// Each firing's lateness, in nanoseconds.
    private(set) var lateness: [UInt64] = []
    private var longest: UInt64 = 0
    /// How many slots had been declared when the probe fired latest.
    private(set) var slotsAtLongest = 0
    /// Reads the slots declared so far, on the loop thread.
    var slotsNow: () -> Int = { 0 }

    func start(on loop: UVLoop) {
        lateness.reserveCapacity(1 << 20)
        timer = try! loop.makeUVTimer { [unowned self] in
            let now = monotonicNanoseconds()
            let due = armedAt + UInt64(Self.period.components.attoseconds / 1_000_000_000)
            let late = now > due ? now - due : 0
            if late > longest {
                longest = late
                slotsAtLongest = slotsNow()
            }
            lateness.append(late)
            arm()
        }
        arm()
    }

    private func arm() {
        armedAt = monotonicNanoseconds()
        try! timer!.start(after: Self.period)
    }

    func stop() {
        timer?.close()
        timer = nil
    }

    /// The `fraction` percentile of the lateness, in milliseconds (1.0: the longest).
    func percentile(_ fraction: Double) -> Double {
        guard !lateness.isEmpty else { return 0 }
        let sorted = lateness.sorted()
        let index = min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))
        return Double(sorted[index]) / 1e6
    }
}
