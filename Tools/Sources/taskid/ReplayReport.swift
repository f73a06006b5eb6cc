import TaskIdentity

/// What `taskid replay` prints: the trace's figures beside its two replays, as a table or as
/// one JSON object. A value; any thread.
struct ReplayReport {
    let file: String
    let replay: TraceReplay
    let recordedSettings: TraceReplay.Settings
    let newSettings: TraceReplay.Settings
    let asRecorded: TraceReplay.Figures
    let asNew: TraceReplay.Figures
    /// Wall-clock time of the whole command: reading the file and both replays.
    let elapsed: Duration

    private var tasks: Int { Set(replay.declarations.map(\.task)).count }

    /// How many times faster than the trace's real time the command ran its two replays (the
    /// file read included).
    var speedUp: Double {
        let replayed = 2 * seconds(replay.recordedFigures.span)
        return replayed / max(seconds(elapsed), 1e-9)
    }

    func table() -> String {
        let trace = replay.recordedFigures
        var lines = [
            "taskid replay \(file): \(trace.declarations) declarations of \(tasks) tasks over "
                + "\(fixed(seconds(trace.span), 1)) s; read and replayed twice in \(fixed(seconds(elapsed), 2)) s "
                + "(\(Int(speedUp.rounded()))x real time)",
            "",
        ]
        var rows: [[String]] = [["", "trace", "replay: recorded settings", "replay: new settings"]]
        func setting(_ name: String, _ value: (TraceReplay.Settings) -> String) {
            rows.append([name, "", value(recordedSettings), value(newSettings)])
        }
        setting("debounce") { "\(milliseconds($0.debounce)) ms" }
        setting("throttle") { "\(milliseconds($0.throttle)) ms" }
        setting("max-wait") { $0.maxWait.map { "\(milliseconds($0)) ms" } ?? "none" }
        setting("limit") { $0.maxRunning.map(String.init) ?? "none" }
        setting("backend") { settings in
            if case .fixed(let duration) = settings.backend { return "\(milliseconds(duration)) ms" }
            return "trace"
        }
        func figure(_ name: String, _ value: (TraceReplay.Figures) -> String) {
            rows.append([name, value(trace), value(asRecorded), value(asNew)])
        }
        figure("backend calls") { "\($0.backendCalls)" }
        figure("wasted calls") { "\($0.wastedCalls)" }
        figure("answers") { "\($0.answers)" }
        figure("answer p50") { "\(milliseconds($0.answerP50)) ms" }
        figure("answer p99") { "\(milliseconds($0.answerP99)) ms" }
        figure("most runs at once") { "\($0.peakRunning)" }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.enumerated().map { column, cell in
                column == 0
                    ? cell.padding(toLength: widths[0])
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }
            lines.append(cells.joined(separator: "   "))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    func json() -> String {
        func figures(_ figures: TraceReplay.Figures) -> String {
            #"{"declarations":\#(figures.declarations),"backend_calls":\#(figures.backendCalls),"#
                + #""wasted_calls":\#(figures.wastedCalls),"answers":\#(figures.answers),"#
                + #""answer_p50_ms":\#(milliseconds(figures.answerP50)),"answer_p99_ms":\#(milliseconds(figures.answerP99)),"#
                + #""most_running":\#(figures.peakRunning)}"#
        }
        func settings(_ settings: TraceReplay.Settings) -> String {
            let backend: String
            if case .fixed(let duration) = settings.backend {
                backend = milliseconds(duration)
            } else {
                backend = #""trace""#
            }
            return
                #"{"debounce_ms":\#(milliseconds(settings.debounce)),"throttle_ms":\#(milliseconds(settings.throttle)),"#
                + #""max_wait_ms":\#(settings.maxWait.map(milliseconds) ?? "null"),"#
                + #""limit":\#(settings.maxRunning.map(String.init) ?? "null"),"backend_ms":\#(backend)}"#
        }
        return #"{"trace":\#(figures(replay.recordedFigures)),"recorded":\#(figures(asRecorded)),"#
            + #""new":\#(figures(asNew)),"recorded_settings":\#(settings(recordedSettings)),"#
            + #""new_settings":\#(settings(newSettings)),"trace_seconds":\#(fixed(seconds(replay.recordedFigures.span), 3)),"#
            + #""replay_seconds":\#(fixed(seconds(elapsed), 3)),"speed_up":\#(Int(speedUp.rounded()))}"# + "\n"
    }
}

private func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Milliseconds, to the microsecond, without trailing zeros: `50`, `12.345`.
private func milliseconds(_ duration: Duration) -> String {
    let microseconds = Int64((seconds(duration) * 1e6).rounded())
    let whole = microseconds / 1_000
    let fraction = microseconds % 1_000
    guard fraction != 0 else { return "\(whole)" }
    var digits = String(fraction)
    digits = String(repeating: "0", count: 3 - digits.count) + digits
    while digits.hasSuffix("0") { digits.removeLast() }
    return "\(whole).\(digits)"
}

/// `value` with `places` decimals.
private func fixed(_ value: Double, _ places: Int) -> String {
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let scaled = Int64((value * scale).rounded())
    let whole = scaled / Int64(scale)
    var fraction = String(scaled % Int64(scale))
    fraction = String(repeating: "0", count: max(0, places - fraction.count)) + fraction
    return places == 0 ? "\(whole)" : "\(whole).\(fraction)"
}

extension String {
    fileprivate func padding(toLength length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }
}
