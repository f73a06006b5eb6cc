/// The catalogue the fake backend searches: a fixed list of words, so that the example needs no
/// data files and its answers are predictable in the check script.
///
/// Immutable; may be read from any thread.
enum WordList {
    static let words: [String] = [
        "sea", "seal", "seam", "search", "searched", "searcher", "searches", "searching",
        "searchlight", "season", "seasonal", "seat", "second", "secret", "section", "secure",
        "see", "seed", "seek", "seem", "segment", "select", "selection", "self", "sell", "send",
        "senior", "sense", "sentence", "separate", "sequence", "series", "serious", "serve",
        "server", "service", "session", "set", "settle", "setup", "seven", "several", "severe",
        "research", "researcher", "researching", "soul", "south", "space", "spark", "speak",
        "special", "speed", "spell", "spend", "spirit", "split", "spring", "square", "stable",
        "stack", "staff", "stage", "stale", "stand", "standard", "star", "start", "state",
        "station", "status", "stay", "steady", "step", "stick", "still", "stock", "stone", "stop",
        "store", "storm", "story", "stream", "street", "strength", "stress", "strict", "string",
        "strong", "structure", "student", "study", "style", "subject", "submit", "success",
        "sudden", "suggest", "summer", "supply", "support", "surface", "surprise", "swift",
        "switch", "symbol", "system", "table", "task", "teach", "team", "term", "test", "text",
        "thread", "throttle", "ticket", "timer", "token", "topic", "track", "trade", "traffic",
        "type", "typeahead", "user", "value", "view", "wait", "watch", "window", "word", "work",
    ]

    /// Up to `limit` words that start with `query`, then words that contain it, in list
    /// order; none for an empty query.
    ///
    /// May be called from any thread.
    static func matches(_ query: String, limit: Int = 10) -> [String] {
        guard !query.isEmpty else { return [] }
        let needle = query.lowercased()
        let prefixed = words.filter { $0.hasPrefix(needle) }
        let containing = words.filter { !$0.hasPrefix(needle) && $0.contains(needle) }
        return Array((prefixed + containing).prefix(limit))
    }
}
