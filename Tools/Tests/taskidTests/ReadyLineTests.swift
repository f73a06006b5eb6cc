import Foundation
import Testing

@testable import taskid

@Suite("the ready line")
struct ReadyLineTests {
    @Test func isOneLineOfJSONThatDecodesBack() throws {
        let line = ReadyLine(host: "a \"quoted\"\\host", port: 6380, loops: 2, pid: 1234)
        #expect(!line.json.contains("\n"))
        #expect(
            line.json
                == #"{"event":"ready","host":"a \"quoted\"\\host","port":6380,"loops":2,"version":"0.12.0","pid":1234}"#
        )
        #expect(try JSONDecoder().decode(ReadyLine.self, from: Data(line.json.utf8)) == line)
    }
}
