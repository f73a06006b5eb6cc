import Testing

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

    @Test(arguments: [
        ("user", "line 1: a line must be 'user NAME rules…', got 'user'"),
        ("bob on", "line 1: a line must be 'user NAME rules…', got 'bob'"),
        ("\nuser a on +@strings", "line 2: unknown command category 'strings'"),
        ("user a on +flushall", "line 1: unknown command 'flushall'"),
        ("user a on ~cache:*", "line 1: key and channel patterns other than ~* and &* are not supported: '~cache:*'"),
        ("user a on sometimes", "line 1: unknown rule 'sometimes'"),
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
