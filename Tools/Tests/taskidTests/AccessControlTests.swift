import Testing
import UVLoop

@testable import TaskidServer
@testable import taskid

/// `--requirepass` and `--acl-file`, on their own: who logs in, and what each user may run.
@Suite("Access control: users, passwords, categories")
struct AccessControlTests {
    @Test func withoutAPasswordEveryConnectionIsTheDefaultUser() {
        let access = AccessControl()
        #expect(access.isOpenToAnyone)
        #expect(access.userOfNewConnections?.name == "default")
        #expect(access.userOfNewConnections?.mayRunEverything == true)
    }

    @Test func aPasswordMustBeGivenAndOnlyThatOne() {
        var access = AccessControl()
        access.requirePassword(Array("s3cret".utf8))
        #expect(!access.isOpenToAnyone && access.userOfNewConnections == nil)
        #expect(access.authenticate(name: "default", password: ArraySlice("s3cret".utf8))?.name == "default")
        #expect(access.authenticate(name: "default", password: ArraySlice("s3cre".utf8)) == nil)
        #expect(access.authenticate(name: "default", password: ArraySlice("s3cret!".utf8)) == nil)
        #expect(access.authenticate(name: "nobody", password: ArraySlice("s3cret".utf8)) == nil)
    }

    @Test func anACLFileGivesEachUserItsCommands() throws {
        let access = try AccessControl(
            aclFile: """
                # operators and readers
                user ops on >opspass +@all ~* &*
                user reader on >r1 >r2 +@read +@connection -@admin ~*
                user writer on nopass +@write +@read
                user gone off >x +@all

                """)
        let reader = try #require(access.authenticate(name: "reader", password: ArraySlice("r2".utf8)))
        #expect(reader.allowed.contains("GET") && reader.allowed.contains("PING"))
        #expect(!reader.allowed.contains("SET") && !reader.allowed.contains("TASK.TRACE"))
        #expect(!reader.mayRunEverything)
        #expect(access.authenticate(name: "ops", password: ArraySlice("opspass".utf8))?.mayRunEverything == true)
        #expect(
            access.authenticate(name: "writer", password: ArraySlice("anything".utf8))?.allowed.contains("SET") == true)
        #expect(access.authenticate(name: "gone", password: ArraySlice("x".utf8)) == nil, "a user that is off")
        #expect(access.isOpenToAnyone, "the default user is untouched by the file")
    }

    @Test func rulesApplyInOrder() throws {
        let access = try AccessControl(aclFile: "user u on nopass +@all -@dangerous +info -set")
        let user = try #require(access.authenticate(name: "u", password: []))
        #expect(user.allowed.contains("INFO") && !user.allowed.contains("CONFIG") && !user.allowed.contains("SET"))
    }

    /// Redis's `ACL SAVE` writes passwords as `#<sha256>`: such a file logs its users in, and
    /// `<password` / `!hash` take a password away.
    @Test func passwordsMayBeGivenAsTheirHashes() throws {
        let hash = "c07607fc424ffe83962a2b94c54e7fd3d61b8023b0daafc6acc2fde229af9b0b"  // "hashedpass"
        let access = try AccessControl(
            aclFile: """
                user saved on #\(hash) +@all ~*
                user dropped on >one >two <one +@all ~*
                user unhashed on >hashedpass #\(hash) !\(hash) >other +@all ~*
                """)
        #expect(access.authenticate(name: "saved", password: ArraySlice("hashedpass".utf8))?.name == "saved")
        #expect(access.authenticate(name: "saved", password: ArraySlice("hashedpas".utf8)) == nil)
        #expect(access.authenticate(name: "dropped", password: ArraySlice("one".utf8)) == nil)
        #expect(access.authenticate(name: "dropped", password: ArraySlice("two".utf8)) != nil)
        #expect(access.authenticate(name: "unhashed", password: ArraySlice("hashedpass".utf8)) == nil)
        #expect(access.authenticate(name: "unhashed", password: ArraySlice("other".utf8)) != nil)
    }

    /// Without `~*` a user names no key (Redis: no pattern of its matches); keyless commands run.
    @Test func aUserWithoutAKeyRuleMayNameNoKey() async throws {
        let access = try AccessControl(aclFile: "user nokeys on >p +@all\nuser reset on >p +@all ~* resetkeys")
        #expect(access.authenticate(name: "nokeys", password: ArraySlice("p".utf8))?.mayRunEverything == false)
        try await withServer({ $0.access = access }) { server, clientLoop in
            let client = TestClient(loop: clientLoop, port: server.port)
            try await client.connect()
            try await client.send(
                "AUTH nokeys p\r\nSET k 1\r\nGET k\r\nEXISTS a b\r\nPING\r\nDBSIZE\r\nAUTH reset p\r\nGET k\r\n")
            let denied = "-NOPERM this user has no permissions to access one of the keys used as arguments"
            #expect(try await client.replies(8) == ["+OK", denied, denied, denied, "+PONG", ":0", "+OK", denied])
        }
    }

    @Test(arguments: [
        ("user", "line 1: a line must be 'user NAME rules…', got 'user'"),
        ("bob on", "line 1: a line must be 'user NAME rules…', got 'bob'"),
        ("\nuser a on +@strings", "line 2: unknown command category 'strings'"),
        ("user a on +flushall", "line 1: unknown command 'flushall'"),
        ("user a on ~cache:*", "line 1: key and channel patterns other than ~* and &* are not supported: '~cache:*'"),
        ("user a on sometimes", "line 1: unknown rule 'sometimes'"),
        ("user a on #abc", "line 1: '#abc' is not a password's SHA-256 in 64 hexadecimal digits"),
        ("user a on #+\(String(repeating: "0", count: 63))", "line 1: '#+0"),  // a sign is not a digit
    ])
    func aWrongFileIsRefusedWithItsLine(text: String, message: String) {
        #expect {
            _ = try AccessControl(aclFile: text)
        } throws: { error in
            "\(error)".hasPrefix(message)
        }
    }

    @Test func passwordsCompareByTheirWholeBytes() {
        #expect(AccessControl.equalInConstantTime(Array("abc".utf8), ArraySlice("abc".utf8)))
        #expect(!AccessControl.equalInConstantTime(Array("abc".utf8), ArraySlice("abd".utf8)))
        #expect(!AccessControl.equalInConstantTime(Array("abc".utf8), ArraySlice("ab".utf8)))
        #expect(!AccessControl.equalInConstantTime(Array("ab".utf8), ArraySlice("abc".utf8)))
        #expect(AccessControl.equalInConstantTime([], []))
    }

    /// Every command is in at least one category, and `+@all` is every command.
    @Test func everyCommandHasACategory() {
        for name in RegistryServer.commandArity.keys {
            #expect(!CommandCategory.categories(of: name).isEmpty, "\(name)")
        }
    }
}
