import COpenSSL

/// Who may connect and what each user may run: Redis's ACL users, in the subset this server
/// has commands for. Every connection starts as the `default` user, already authenticated when
/// that user is on and has no password (Redis's default); otherwise it must `AUTH` (or `HELLO
/// … AUTH`) first. A value type; any thread.
package struct AccessControl: Sendable, Equatable {
    /// The users by name; `default` is always among them.
    private(set) var users: [String: AccessUser]

    /// `default`, on, no password, every command: a server without `--requirepass` or
    /// `--acl-file`.
    package init() {
        users = [
            "default": AccessUser(
                name: "default", enabled: true, passwordHashes: [], noPassword: true,
                allowed: CommandCategory.allCommands, mayAccessAllKeys: true)
        ]
    }

    /// The `default` user: it needs `password` from now on (`--requirepass`), whatever it had.
    package mutating func requirePassword(_ password: [UInt8]) {
        var user = users["default"]!
        user.passwordHashes = [AccessUser.hash(password[...])]
        user.noPassword = false
        users["default"] = user
    }

    /// The user a new connection is authenticated as before any `AUTH`: `default` when it is
    /// on and has no password; nil when the client must authenticate.
    package var userOfNewConnections: AccessUser? {
        guard let user = users["default"], user.enabled, user.noPassword else { return nil }
        return user
    }

    /// Whether clients need no password: protected mode then keeps other hosts out.
    package var isOpenToAnyone: Bool { userOfNewConnections != nil }

    /// The user `name` when `password` is one of its own (or it has none) and it is on.
    package func authenticate(name: String, password: ArraySlice<UInt8>) -> AccessUser? {
        guard let user = users[name], user.enabled else { return nil }
        if user.noPassword { return user }
        // Every password compared in full, whatever matches: the time taken tells nothing.
        let hash = AccessUser.hash(password)
        var matched = false
        for candidate in user.passwordHashes where Self.equalInConstantTime(candidate, hash[...]) { matched = true }
        return matched ? user : nil
    }

    /// Compares two byte strings in a time that depends on their lengths only.
    package static func equalInConstantTime(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        var bIndex = b.startIndex
        for byte in a {
            difference |= byte ^ (bIndex < b.endIndex ? b[bIndex] : 0)
            if bIndex < b.endIndex { bIndex += 1 }
        }
        return difference == 0
    }

    /// Reads Redis's ACL file format, one user a line (`user NAME [on|off] [>password | #hash |
    /// <password | !hash | nopass | resetpass] [+@category | -@category | +command | -command |
    /// allcommands | nocommands] [~* | allkeys | resetkeys] [&* | allchannels]`, a hash being a
    /// password's SHA-256 in 64 hexadecimal digits, as Redis's `ACL SAVE` writes it); blank lines
    /// and `#` comments are skipped. Rules apply in order, from no command and no key at all: a
    /// user without `~*` may run no command that names a key. Users not named keep their
    /// defaults (`default`: on, no password, every command, every key).
    /// - Throws: `AccessControlError` naming the line and the word it cannot use.
    package init(aclFile text: String) throws(AccessControlError) {
        self.init()
        for (offset, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let first = words.first, !first.hasPrefix("#") else { continue }
            let number = offset + 1
            guard first == "user", words.count >= 2 else {
                throw AccessControlError(line: number, message: "a line must be 'user NAME rules…', got '\(first)'")
            }
            let name = String(words[1])
            var user = AccessUser(
                name: name, enabled: false, passwordHashes: [], noPassword: false, allowed: [], mayAccessAllKeys: false)
            for word in words.dropFirst(2) { try user.apply(rule: String(word), line: number) }
            users[name] = user
        }
    }
}

/// One user: whether it may log in, with which passwords, and the commands it may run. A value
/// type; any thread.
package struct AccessUser: Sendable, Equatable {
    package let name: String
    var enabled: Bool
    /// Its passwords' SHA-256 hashes: a password is kept as its hash only, as Redis keeps it.
    var passwordHashes: [[UInt8]]
    /// Any password logs it in (`nopass`).
    var noPassword: Bool
    /// The commands it may run, by upper-case name.
    package var allowed: Set<String>
    /// Whether it may name keys (`~*`, `allkeys`): the only key pattern this server has. Without
    /// it, a command that names a key is refused, as Redis refuses a key no pattern matches.
    var mayAccessAllKeys: Bool

    /// Whether it may run every command on every key: its connections take the fast path of `SET`.
    package var mayRunEverything: Bool { mayAccessAllKeys && allowed.isSuperset(of: CommandCategory.allCommands) }

    /// The SHA-256 of `password`. Any thread.
    static func hash(_ password: ArraySlice<UInt8>) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Int(SHA256_DIGEST_LENGTH)) { digest, count in
            password.withUnsafeBufferPointer { _ = SHA256($0.baseAddress, $0.count, digest.baseAddress) }
            count = Int(SHA256_DIGEST_LENGTH)
        }
    }

    /// The 32 bytes of a hash written in 64 hexadecimal digits, or nil. Any thread.
    static func hash(hexadecimal text: Substring) -> [UInt8]? {
        func nibble(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        let digits = Array(text.utf8)
        guard digits.count == 2 * Int(SHA256_DIGEST_LENGTH) else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// Applies one ACL rule (see `AccessControl.init(aclFile:)`).
    mutating func apply(rule: String, line: Int) throws(AccessControlError) {
        switch rule {
        case "on": enabled = true
        case "off": enabled = false
        case "nopass":
            noPassword = true
            passwordHashes = []
        case "resetpass":
            noPassword = false
            passwordHashes = []
        case "allcommands", "+@all": allowed = CommandCategory.allCommands
        case "nocommands", "-@all": allowed = []
        case "~*", "allkeys": mayAccessAllKeys = true  // every key: the only pattern this server has
        case "resetkeys": mayAccessAllKeys = false
        case "&*", "allchannels", "resetchannels":
            break  // this server has no channels
        default:
            if let first = rule.first, ">#<!".contains(first) {
                // > and # give a password (as itself or its hash), < and ! take one away.
                let hash: [UInt8]
                if first == ">" || first == "<" {
                    hash = Self.hash(Array(rule.utf8.dropFirst())[...])
                } else if let given = Self.hash(hexadecimal: rule.dropFirst()[...]) {
                    hash = given
                } else {
                    throw AccessControlError(
                        line: line, message: "'\(rule)' is not a password's SHA-256 in 64 hexadecimal digits")
                }
                if first == ">" || first == "#" {
                    if !passwordHashes.contains(hash) { passwordHashes.append(hash) }
                    noPassword = false
                } else {
                    passwordHashes.removeAll { $0 == hash }
                }
            } else if rule.hasPrefix("+@") || rule.hasPrefix("-@") {
                guard let category = CommandCategory(rawValue: String(rule.dropFirst(2)).lowercased()) else {
                    throw AccessControlError(
                        line: line,
                        message: "unknown command category '\(rule.dropFirst(2))' (this server has "
                            + "\(CommandCategory.allCases.map { "@\($0.rawValue)" }.joined(separator: ", ")) and @all)")
                }
                if rule.hasPrefix("+") {
                    allowed.formUnion(category.commands)
                } else {
                    allowed.subtract(category.commands)
                }
            } else if rule.hasPrefix("+") || rule.hasPrefix("-") {
                let command = String(rule.dropFirst()).uppercased()
                guard CommandCategory.allCommands.contains(command) else {
                    throw AccessControlError(line: line, message: "unknown command '\(rule.dropFirst())'")
                }
                if rule.hasPrefix("+") { allowed.insert(command) } else { allowed.remove(command) }
            } else if rule.hasPrefix("~") || rule.hasPrefix("%") || rule.hasPrefix("&") {
                throw AccessControlError(
                    line: line, message: "key and channel patterns other than ~* and &* are not supported: '\(rule)'")
            } else {
                throw AccessControlError(line: line, message: "unknown rule '\(rule)'")
            }
        }
    }
}

/// Why an ACL file cannot be used. A value type; any thread.
package struct AccessControlError: Error, Equatable, CustomStringConvertible {
    let line: Int
    let message: String
    package var description: String { "line \(line): \(message)" }
}
