import Testing

@testable import TaskLoopCore

@Suite("ChunkedQueue")
struct ChunkedQueueTests {
    final class Payload {}

    /// Random appends and pops in runs long enough to cross chunk boundaries, empty the queue
    /// and refill it, checked against an array at every step.
    @Test func keepsOrderAcrossChunksAgainstAnArray() {
        var queue = ChunkedQueue<(UInt64, Payload)>()
        var reference: [UInt64] = []
        var referenceHead = 0
        var next: UInt64 = 0
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        for _ in 0..<400 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            // Runs of up to 3,000 appends or pops: 1,024 a chunk, so runs span several.
            let run = Int(state % 3_000)
            if state & (1 << 40) == 0 {
                for _ in 0..<run {
                    queue.append((next, Payload()))
                    reference.append(next)
                    next += 1
                }
            } else {
                for _ in 0..<run {
                    let expected = referenceHead < reference.count ? reference[referenceHead] : nil
                    #expect(queue.withFirst { $0?.0 } == expected)
                    let popped = queue.popFirst()?.0
                    #expect(popped == expected)
                    if expected != nil { referenceHead += 1 }
                    if popped != expected { return }
                }
            }
            #expect(queue.count == reference.count - referenceHead)
            #expect(queue.isEmpty == (queue.count == 0))
        }
        while let popped = queue.popFirst() {
            #expect(popped.0 == reference[referenceHead])
            referenceHead += 1
        }
        #expect(referenceHead == reference.count)
    }

    /// A popped element is released at once, not when its chunk goes.
    @Test func aPoppedElementIsReleased() {
        var queue = ChunkedQueue<Payload>()
        weak var first: Payload?
        do {
            let payload = Payload()
            first = payload
            queue.append(payload)
            queue.append(Payload())
        }
        #expect(first != nil)
        _ = queue.popFirst()
        #expect(first == nil)
        #expect(queue.count == 1)
    }
}
