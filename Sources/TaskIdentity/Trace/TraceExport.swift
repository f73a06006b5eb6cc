/// `RegistryTrace` in the Trace Event format (the JSON object form: `traceEvents` plus
/// `otherData`), as Perfetto and `chrome://tracing` read it:
///
/// - one track (a `tid` of process 1) per task, named by its slot key (and task name, when not
///   `main`); track 0, `registry`, holds the shutdown and the count of dropped events;
/// - a complete span (`X`) per run, from its start to its end or its cancellation (a cancelled
///   run's action may return later: an instant `ended after cancel` marks it), named by its
///   generation and identity, with `args` `generation`, `identity` and `phase` (its final
///   phase, or `running`);
/// - a debounce or throttle window as an async span (`b`/`e`, category `window`), which may
///   overlap a run that `keepRunning` keeps;
/// - instants (`i`) for declarations, cancellations, dropped pending generations, commits,
///   stale commits dropped, results, progress, removals, observed changes and stopped cycles;
/// - a flow (`s`/`f`, category `cause`) from the run whose write an observed identity read to
///   the run that the write restarted, where both runs are in the trace.
extension RegistryTrace {
    /// The trace as Trace Event JSON. May be called from any thread.
    public func json() -> String {
        var export = TraceExport(events: events, endTime: endTime, dropped: droppedEvents, capacity: capacity)
        return export.render()
    }
}

/// One pass over the events, oldest first, keeping what is open per track.
private struct TraceExport {
    /// A run's span; its track and generation are its key in `spans`.
    struct Span {
        let start: UInt64
        let end: UInt64
    }

    struct Flow {
        let writer: TraceEvent.Writer
        let track: Int
        let generation: UInt64
        let time: UInt64
    }

    let events: [TraceEvent]
    let endTime: UInt64
    let dropped: UInt64
    let capacity: Int

    /// A task: its slot's key (as a value: two keys with one description are two tracks) and
    /// its name.
    struct Task: Hashable {
        let key: AnyHashable
        let name: TaskName
    }

    var out: [String] = []
    var trackOfTask: [Task: Int] = [:]
    var labels: [String] = ["registry"]
    var labelsUsed: [String: Int] = ["registry": 1]
    /// Per track: the current run (its generation and start) and the identity of each
    /// generation declared.
    var openRun: [Int: (generation: UInt64, start: UInt64)] = [:]
    var identities: [Int: [UInt64: String]] = [:]
    var openWindow: [Int: (id: Int, generation: UInt64, name: String)] = [:]
    var nextWindowID = 1
    /// Each run's spans by track and generation (a slot removed and declared again counts its
    /// generations from 1 again), oldest first.
    var spans: [RunID: [Span]] = [:]
    var flows: [Flow] = []

    struct RunID: Hashable {
        let track: Int
        let generation: UInt64
    }

    init(events: [TraceEvent], endTime: UInt64, dropped: UInt64, capacity: Int) {
        self.events = events
        self.endTime = endTime
        self.dropped = dropped
        self.capacity = capacity
    }

    mutating func render() -> String {
        for event in events { add(event) }
        for (track, run) in openRun { closeRun(track: track, run, at: endTime, phase: "running") }
        for (track, window) in openWindow { closeWindow(track: track, window, at: endTime) }
        renderFlows()
        if dropped > 0 {
            let first = events.first?.time ?? endTime
            instant(track: 0, at: first, name: "\(dropped) earlier events dropped", args: ["dropped": .number(dropped)])
        }
        var metadata = [
            #"{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"TaskRegistry"}}"#
        ]
        for (track, label) in labels.enumerated() {
            metadata.append(
                #"{"name":"thread_name","ph":"M","pid":1,"tid":\#(track),"args":{"name":\#(quoted(label))}}"#)
            metadata.append(
                #"{"name":"thread_sort_index","ph":"M","pid":1,"tid":\#(track),"args":{"sort_index":\#(track)}}"#)
        }
        let other =
            #"{"droppedEvents":\#(dropped),"capacity":\#(capacity),"events":\#(events.count),"#
            + #""clock":"loop nanoseconds, shown in microseconds"}"#
        return #"{"traceEvents":["# + (metadata + out).joined(separator: ",\n")
            + #"],"displayTimeUnit":"ms","otherData":\#(other)}"# + "\n"
    }

    private mutating func track(of event: TraceEvent) -> Int {
        let task = Task(key: AnyHashable(event.key), name: event.name)
        if let track = trackOfTask[task] { return track }
        // Two tasks whose keys describe alike get one label each: `label`, `label (2)`, ….
        let label = event.task
        let uses = labelsUsed[label, default: 0] + 1
        labelsUsed[label] = uses
        labels.append(uses == 1 ? label : "\(label) (\(uses))")
        trackOfTask[task] = labels.count - 1
        return labels.count - 1
    }

    private mutating func add(_ event: TraceEvent) {
        if case .shutDown = event.kind {
            instant(track: 0, at: event.time, name: "shutdown", scope: "g")
            return
        }
        let track = track(of: event)
        let generation = event.generation
        switch event.kind {
        case .declared(let value):
            let identity = TraceEvent.describe(identity: value)
            identities[track, default: [:]][generation] = identity
            instant(
                track: track, at: event.time, name: "declared g\(generation)",
                args: ["generation": .number(generation), "identity": .text(identity)])
        case .declarationDropped:
            instant(
                track: track, at: event.time, name: "new identity dropped", args: ["generation": .number(generation)])
        case .windowOpened(let window, let until):
            if let open = openWindow[track] { closeWindow(track: track, open, at: event.time) }
            let id = nextWindowID
            nextWindowID += 1
            openWindow[track] = (id, generation, window.rawValue)
            out.append(
                #"{"name":"\#(window.rawValue)","cat":"window","ph":"b","id":\#(id),"ts":\#(micros(event.time)),"#
                    + #""pid":1,"tid":\#(track),"args":{"generation":\#(generation),"until_us":\#(micros(until))}}"#)
        case .windowClosed:
            if let open = openWindow[track] { closeWindow(track: track, open, at: event.time) }
        case .queued:
            // A window with no deadline: it lasts until a run of the limit ends.
            if let open = openWindow[track] { closeWindow(track: track, open, at: event.time) }
            let id = nextWindowID
            nextWindowID += 1
            openWindow[track] = (id, generation, "queue")
            out.append(
                #"{"name":"queue","cat":"window","ph":"b","id":\#(id),"ts":\#(micros(event.time)),"#
                    + #""pid":1,"tid":\#(track),"args":{"generation":\#(generation)}}"#)
        case .runStarted(let executor):
            if let open = openRun[track] { closeRun(track: track, open, at: event.time, phase: "unknown") }
            if let open = openWindow[track], open.generation == generation {
                closeWindow(track: track, open, at: event.time)
            }
            openRun[track] = (generation, event.time)
            if let executor {
                instant(
                    track: track, at: event.time, name: "started on \(executor)", args: ["executor": .text(executor)])
            }
        case .cancelled(let reason, let ofRun):
            if ofRun {
                if let open = openRun[track], open.generation == generation {
                    closeRun(track: track, open, at: event.time, phase: "cancelled(\(reason))")
                }
                instant(
                    track: track, at: event.time, name: "cancelled(\(reason))",
                    args: ["generation": .number(generation)])
            } else {
                if let open = openWindow[track], open.generation == generation {
                    closeWindow(track: track, open, at: event.time)
                }
                instant(
                    track: track, at: event.time, name: "dropped(\(reason))",
                    args: ["generation": .number(generation), "ran": .text("no")])
            }
        case .joinedRun:
            instant(
                track: track, at: event.time, name: "joined a shared run", args: ["generation": .number(generation)])
        case .commitLanded:
            instant(track: track, at: event.time, name: "commit", args: ["generation": .number(generation)])
        case .commitDropped:
            instant(
                track: track, at: event.time, name: "stale commit dropped", args: ["generation": .number(generation)])
        case .resultStored:
            instant(track: track, at: event.time, name: "result", args: ["generation": .number(generation)])
        case .runEnded(let phase?):
            if let open = openRun[track], open.generation == generation {
                closeRun(track: track, open, at: event.time, phase: "\(phase)")
            }
        case .runEnded(nil):
            instant(
                track: track, at: event.time, name: "ended after cancel", args: ["generation": .number(generation)])
        case .progressShown:
            instant(track: track, at: event.time, name: "progress", args: ["generation": .number(generation)])
        case .removed:
            instant(track: track, at: event.time, name: "removed")
        case .observedChange(let writer):
            var args: [String: JSONValue] = ["generation": .number(generation)]
            if let writer {
                args["writer"] = .text("\(writer.task) g\(writer.generation)")
                flows.append(Flow(writer: writer, track: track, generation: generation, time: event.time))
            }
            instant(track: track, at: event.time, name: "observed change", args: args)
        case .cycleStopped:
            instant(track: track, at: event.time, name: "cycle stopped", args: ["generation": .number(generation)])
        case .shutDown:
            break  // above
        }
    }

    private mutating func closeRun(
        track: Int, _ run: (generation: UInt64, start: UInt64), at end: UInt64, phase: String
    ) {
        openRun[track] = nil
        let identity = identities[track]?[run.generation] ?? "?"
        spans[RunID(track: track, generation: run.generation), default: []].append(
            Span(start: run.start, end: end))
        out.append(
            #"{"name":\#(quoted("g\(run.generation) \(identity)")),"cat":"run","ph":"X","ts":\#(micros(run.start)),"#
                + #""dur":\#(micros(end - run.start)),"pid":1,"tid":\#(track),"#
                + #""args":{"generation":\#(run.generation),"identity":\#(quoted(identity)),"phase":\#(quoted(phase))}}"#
        )
    }

    private mutating func closeWindow(track: Int, _ window: (id: Int, generation: UInt64, name: String), at end: UInt64)
    {
        openWindow[track] = nil
        out.append(
            #"{"name":"\#(window.name)","cat":"window","ph":"e","id":\#(window.id),"ts":\#(micros(end)),"#
                + #""pid":1,"tid":\#(track)}"#)
    }

    /// A flow joins the writer's run (at the write's evaluation, or the run's end if it ended
    /// first) to the start of the run it caused; both must be spans of the trace. The writer's
    /// run is its latest span of that generation started by then; the caused run, the first
    /// started after.
    private mutating func renderFlows() {
        var id = 1
        for flow in flows {
            guard
                let writerTrack = trackOfTask[Task(key: AnyHashable(flow.writer.key), name: flow.writer.name)],
                let source = spans[RunID(track: writerTrack, generation: flow.writer.generation)]?
                    .last(where: { $0.start <= flow.time }),
                let target = spans[RunID(track: flow.track, generation: flow.generation)]?
                    .first(where: { $0.start >= flow.time })
            else { continue }
            let at = min(max(flow.time, source.start), source.end)
            out.append(
                #"{"name":"restart","cat":"cause","ph":"s","id":\#(id),"ts":\#(micros(at)),"pid":1,"tid":\#(writerTrack)}"#
            )
            out.append(
                #"{"name":"restart","cat":"cause","ph":"f","bp":"e","id":\#(id),"ts":\#(micros(target.start)),"#
                    + #""pid":1,"tid":\#(flow.track)}"#)
            id += 1
        }
    }

    enum JSONValue {
        case number(UInt64)
        case text(String)
    }

    private mutating func instant(
        track: Int, at time: UInt64, name: String, scope: String = "t", args: [String: JSONValue] = [:]
    ) {
        let fields = args.keys.sorted().map { key -> String in
            switch args[key]! {
            case .number(let value): return "\(quoted(key)):\(value)"
            case .text(let value): return "\(quoted(key)):\(quoted(value))"
            }
        }
        out.append(
            #"{"name":\#(quoted(name)),"ph":"i","s":"\#(scope)","ts":\#(micros(time)),"pid":1,"tid":\#(track),"#
                + #""args":{\#(fields.joined(separator: ","))}}"#)
    }
}

/// Loop nanoseconds as the format's microseconds, with three decimals.
private func micros(_ nanoseconds: UInt64) -> String {
    let fraction = nanoseconds % 1_000
    let padded = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
    return "\(nanoseconds / 1_000).\(padded)"
}

/// `text` as a JSON string.
private func quoted(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}
