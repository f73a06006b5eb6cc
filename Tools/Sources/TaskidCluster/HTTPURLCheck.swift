/// The check every URL setting of `taskid serve` gets (`--otlp-endpoint`, `--etcd`, the
/// `OTEL_*` variables): `http(s)://HOST[:PORT]`, and a path only where one is allowed. A
/// namespace; any thread.
package enum HTTPURLCheck {
    /// Why `url` cannot be used, or nil when it can: no scheme or another than http and
    /// https, an empty host, a host with characters a host name cannot have, an IPv6 address
    /// without its closing bracket, a port that is not a number in 1...65535, a path where
    /// none is allowed, spaces or control characters.
    /// `pathNote` is said after a refused path (where the setting's own path goes).
    package static func problem(with url: String, pathAllowed: Bool, pathNote: String? = nil) -> String? {
        guard url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F }) else {
            return "spaces and control characters are not allowed"
        }
        let rest: Substring
        if url.hasPrefix("http://") {
            rest = url.dropFirst("http://".count)
        } else if url.hasPrefix("https://") {
            rest = url.dropFirst("https://".count)
        } else {
            return "the URL must start with http:// or https://"
        }
        let authority = rest.prefix { $0 != "/" }
        let path = rest.dropFirst(authority.count)
        if !pathAllowed && path != "" && path != "/" {
            return "give the base URL, without a path" + (pathNote.map { ": \($0)" } ?? "")
        }
        var host = authority
        if authority.hasPrefix("[") {
            // An IPv6 literal: [::1] or [::1]:4318.
            guard let close = authority.firstIndex(of: "]") else { return "an IPv6 address needs its closing ]" }
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return "only :PORT may follow an IPv6 address" }
                if let problem = portProblem(after.dropFirst()) { return problem }
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            if let problem = portProblem(authority[authority.index(after: colon)...]) { return problem }
        }
        guard host.count > (host.hasPrefix("[") ? 2 : 0) else { return "the host is empty" }
        if !host.hasPrefix("[") {
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
            guard host.allSatisfy({ allowed.contains($0) }) else {
                return "the host may hold letters, digits, '.', '-' and '_' only"
            }
        }
        return nil
    }

    private static func portProblem(_ port: Substring) -> String? {
        guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port),
            (1...65_535).contains(number)
        else { return "the port must be a number in 1...65535" }
        return nil
    }
}
