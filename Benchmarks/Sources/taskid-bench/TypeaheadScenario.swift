import ArgumentParser
import Foundation
import TaskIdentity
import UVLoop

/// `taskid-bench typeahead`: search as you type on a real loop, in real time, for a trace to
/// look at (the timeline picture of docs/REGISTRY.md): a few sessions each type a burst of keystrokes inside
/// the debounce window, then a new query while the search for the first one runs. That search
/// ignores its cancellation and tries to land its result late (dropped as stale); the last
/// query's search lands. Checks the outcome; exit status 1 when a session shows a stale result.
struct TypeaheadScenario: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "typeahead",
        abstract:
            "Search as you type, in real time: bursts, a search cancelled by the next query, a stale result dropped.")

    @Option(help: "Sessions typing at once.") var sessions = 3
    @Option(help: "The debounce window, in milliseconds.") var debounceMs = 250
    @Option(help: "How long a search takes, in milliseconds (it ignores its cancellation).") var searchMs = 300
    @Option(help: "Milliseconds between keystrokes in a burst.") var keystrokeMs = 60
    @Flag(help: "Print one JSON object instead of a key=value line.") var json = false
    @OptionGroup var tracing: TraceOptions

    static let words = ["swift nio", "libuv loop", "perfetto", "hummingbird", "observation"]

    func run() throws {
        let loop = UVLoop(name: "typeahead")
        try loop.start()
        defer { try? loop.syncShutdown() }
        let registry = TaskRegistry<String>(loop: loop)
        try tracing.start([registry], on: [loop])
        let shown = LoopLocal([String: String]())
        let search = Duration.milliseconds(searchMs)
        let debounce = Duration.milliseconds(debounceMs)
        // Each session: the first word's letters in a burst, a pause long enough for its search
        // to start, then the second word's letters, which cancel it.
        var plan: [(at: Int, session: String, query: String)] = []
        var finals: [String: String] = [:]
        for index in 0..<sessions {
            let session = "session-\(index + 1)"
            let first = Self.words[index % Self.words.count]
            let second = Self.words[(index + 1) % Self.words.count]
            let start = index * 40
            for length in 1...min(4, first.count) {
                plan.append((start + (length - 1) * keystrokeMs, session, String(first.prefix(length))))
            }
            let searching = start + 3 * keystrokeMs + debounceMs + searchMs / 3
            for length in 1...min(3, second.count) {
                plan.append((searching + (length - 1) * keystrokeMs, session, String(second.prefix(length))))
            }
            finals[session] = String(second.prefix(min(3, second.count)))
        }
        let end = (plan.map(\.at).max() ?? 0) + debounceMs + searchMs + 200
        let steps = plan
        let measurement = Measurement()
        try runOnLoop(loop) { done in
            let timers = LoopLocal([UVTimer]())
            for step in steps {
                let timer = try! loop.makeUVTimer {
                    try! registry.task(step.session, id: step.query, debounce: debounce) { context in
                        // A search that does not stop when cancelled (a wait on a loop timer,
                        // not a cancellable sleep): its late commit is dropped.
                        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
                            let timer = LoopLocal<UVTimer?>(nil)
                            timer.value = try! loop.makeUVTimer {
                                timer.value?.close()
                                finished.resume()
                            }
                            try! timer.value!.start(after: search)
                        }
                        context.commit { shown.value[step.session] = step.query }
                    }
                }
                try! timer.start(after: .milliseconds(step.at))
                timers.value.append(timer)
            }
            let finish = try! loop.makeUVTimer {
                for timer in timers.value { timer.close() }
                done()
            }
            try! finish.start(after: .milliseconds(end))
            timers.value.append(finish)
        }
        let counters = try blockOn { try await registry.countersSnapshot() }
        try tracing.write([registry], on: [loop])
        try blockOn { await registry.shutdown() }
        var report = RunReport()
        report.add("workload", "typeahead")
        report.add("sessions", sessions)
        report.add("keystrokes", plan.count)
        report.add("started", Int(counters.started))
        report.add("cancelled", Int(counters.cancelled))
        report.add("coalesced", Int(counters.coalesced))
        report.add("stale_commits_dropped", Int(counters.staleCommitsDropped))
        report.add("seconds", measurement.seconds, decimals: 2)
        print(report.line(json: json))
        let wrong = finals.filter { shown.value[$0.key] != $0.value }
        if !wrong.isEmpty {
            throw CorrectnessFailure(
                description: "sessions showing another query than their last: \(wrong.keys.sorted())")
        }
    }
}
