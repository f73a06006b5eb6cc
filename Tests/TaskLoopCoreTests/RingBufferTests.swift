import Testing

@testable import TaskLoopCore

@Suite("RingBuffer")
struct RingBufferTests {
    final class Payload {}
    struct Entry {
        var payload: Payload
        var deadline: UInt64
    }

    @Test func withFirstReadsTheOldestElementInPlaceAcrossWrapAndGrowth() {
        var buffer = RingBuffer<Entry>()
        #expect(buffer.withFirst { $0?.deadline } == nil)
        // Push and pop past the first capacity (16) so that the head wraps, then grow while wrapped.
        for deadline in UInt64(0)..<20 { buffer.append(Entry(payload: Payload(), deadline: deadline)) }
        for expected in UInt64(0)..<15 {
            #expect(buffer.withFirst { $0?.deadline } == expected)
            #expect(buffer.popFirst()?.deadline == expected)
        }
        for deadline in UInt64(20)..<60 { buffer.append(Entry(payload: Payload(), deadline: deadline)) }
        for expected in UInt64(15)..<60 {
            #expect(buffer.withFirst { $0?.deadline } == expected)
            #expect(buffer.popFirst()?.deadline == expected)
        }
        #expect(buffer.isEmpty)
        #expect(buffer.withFirst { $0?.deadline } == nil)
    }
}
