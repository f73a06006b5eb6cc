import Testing

@testable import TaskIdentity

/// `NodeList`: links against a plain array model under random operations, and payloads freed
/// when the list empties or goes (its chunks are raw memory that `NodeChunks` frees).
@Suite("NodeList: order, reuse of nodes, and payloads freed with its chunks")
struct NodeListTests {
    final class Payload {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    @Test func randomOperationsKeepTheModelsOrderAcrossChunks() {
        var list = NodeList<Payload>()
        var model: [(number: UInt32, value: Int)] = []
        var random = SplitMix64(state: 44)
        var next = 0
        for step in 0..<20_000 {
            // Grows past two chunks (1,024 nodes each), then shrinks, then grows again.
            let appendChance = step < 6_000 || step > 12_000 ? 6 : 1
            let roll = random.below(10)
            if roll < appendChance || model.isEmpty {
                next += 1
                model.append((list.append(Payload(next)), next))
            } else if roll < 8 {
                let index = random.below(model.count)
                list.moveToEnd(model[index].number)
                model.append(model.remove(at: index))
            } else {
                let index = random.below(model.count)
                let removed = list.remove(model[index].number)
                #expect(removed.value == model.remove(at: index).value)
            }
            #expect(list.count == model.count)
            if step % 500 == 0 {
                var order: [Int] = []
                let broken = list.brokenInvariant { _, payload in
                    order.append(payload.value)
                    return nil
                }
                #expect(broken == nil)
                #expect(order == model.map(\.value))
            }
        }
    }

    @Test func payloadsAreReleasedWhenTheListEmptiesOrGoes() {
        weak var kept: Payload?
        weak var removed: Payload?
        do {
            var list = NodeList<Payload>()
            var numbers: [UInt32] = []
            for value in 0..<1_500 {
                let payload = Payload(value)
                if value == 0 { removed = payload }
                if value == 1 { kept = payload }
                numbers.append(list.append(payload))
            }
            _ = list.remove(numbers[0])
            #expect(removed == nil, "a removed node keeps no payload")
            #expect(kept != nil)
            for number in numbers.dropFirst() { _ = list.remove(number) }
            #expect(kept == nil && list.count == 0)
            for value in 0..<10 {
                let payload = Payload(value)
                if value == 0 { kept = payload }
                _ = list.append(payload)
            }
            #expect(kept != nil)
        }
        #expect(kept == nil, "a list that goes frees the payloads still linked")
    }

    @Test func aListThatEmptiesAndFillsAgainKeepsItsOrder() {
        var list = NodeList<Payload>()
        for round in 1...3 {
            // Past one chunk in the second round: its first chunk is kept, the others dropped.
            let size = round == 2 ? 2_500 : 3
            let numbers = (0..<size).map { list.append(Payload($0)) }
            #expect(numbers.first == 1, "an emptied list numbers its nodes from 1 again")
            var order: [Int] = []
            let broken = list.brokenInvariant { _, payload in
                order.append(payload.value)
                return nil
            }
            #expect(broken == nil && order == Array(0..<size))
            for number in numbers { _ = list.remove(number) }
            #expect(list.count == 0 && list.head == 0 && list.tail == 0)
        }
    }
}
