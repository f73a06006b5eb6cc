/// A doubly linked list whose nodes live in chunks of 1,024, named by number (an index plus
/// one, so that zero means none): a payload can be appended, moved to the end or taken out in
/// O(1), by a number its owner keeps, with no allocation per node once warm and no reference
/// counting per move. Freed nodes are reused through a free list, and every node is dropped
/// when the list empties, with every chunk but the first (a list that keeps emptying, the
/// time limits of one run at a time, allocates nothing per cycle). A chunk is never moved, so
/// the list never stops the loop to grow.
///
/// A chunk is raw memory (`NodeChunks` owns and frees it), not an array: a move writes five
/// links, and through nested arrays each write checked two arrays' uniqueness (W2 spent about
/// 100 instructions a change on those checks). Its nodes are initialized as they are first
/// used, in order: nodes `1...nodeCount`.
///
/// The storage of `DebounceWindows` and `TimeLimits`: lists of deadlines of one fixed delay,
/// kept in the order they pass. Loop thread only, as they are.
struct NodeList<Payload> {
    struct Node {
        var payload: Payload?
        var next: UInt32
        var previous: UInt32
    }

    static var chunkShift: Int { 10 }
    static var chunkCapacity: Int { 1 << chunkShift }

    /// The chunks, each of `chunkCapacity` nodes, of which the first `nodeCount` are initialized
    /// (a free node's payload is nil).
    private var chunks: ContiguousArray<UnsafeMutablePointer<Node>> = []
    /// Frees the chunks when the list goes; nil until the first chunk.
    private var owner: NodeChunks<Payload>?
    /// The first node of the free list (chained through `next`), or zero.
    private var firstFree: UInt32 = 0
    /// Nodes initialized in `chunks` (linked or free).
    private var nodeCount = 0
    /// The first and the last linked node, or zero.
    private(set) var head: UInt32 = 0
    private(set) var tail: UInt32 = 0
    /// Linked nodes.
    private(set) var count = 0

    @inline(__always)
    private mutating func withNode<Result>(_ number: UInt32, _ body: (inout Node) -> Result) -> Result {
        let index = Int(number &- 1)
        return body(&chunks[index >> Self.chunkShift][index & (Self.chunkCapacity - 1)])
    }

    /// Initializes node `nodeCount + 1` with `payload`, in a new chunk if the last is full, and
    /// returns its number.
    private mutating func initializeNextNode(_ payload: Payload) -> UInt32 {
        if nodeCount >> Self.chunkShift == chunks.count {
            let chunk = UnsafeMutablePointer<Node>.allocate(capacity: Self.chunkCapacity)
            if owner == nil { owner = NodeChunks() }
            owner!.chunks.append(chunk)
            chunks.append(chunk)
        }
        (chunks[nodeCount >> Self.chunkShift] + (nodeCount & (Self.chunkCapacity - 1))).initialize(
            to: Node(payload: payload, next: 0, previous: 0))
        nodeCount += 1
        owner!.initialized = nodeCount
        return UInt32(truncatingIfNeeded: nodeCount)
    }

    /// The payload of the linked node `number`, read in place.
    @inline(__always)
    func withPayload<Result>(_ number: UInt32, _ body: (borrowing Payload) -> Result) -> Result {
        let index = Int(number &- 1)
        return body(chunks[index >> Self.chunkShift][index & (Self.chunkCapacity - 1)].payload!)
    }

    /// Links `payload` last and returns its node's number.
    @inline(__always)
    mutating func append(_ payload: Payload) -> UInt32 {
        let number: UInt32
        if firstFree != 0 {
            number = firstFree
            firstFree = withNode(number) { node in
                let next = node.next
                node = Node(payload: payload, next: 0, previous: 0)
                return next
            }
        } else {
            number = initializeNextNode(payload)
        }
        count += 1
        link(number)
        return number
    }

    /// Moves the linked node `number` to the end.
    @inline(__always)
    mutating func moveToEnd(_ number: UInt32) {
        if number == tail { return }
        unlink(number)
        link(number)
    }

    /// Unlinks the node `number` and returns its payload; the number may be reused at once.
    @inline(__always)
    @discardableResult
    mutating func remove(_ number: UInt32) -> Payload {
        unlink(number)
        count -= 1
        let free = firstFree
        let payload = withNode(number) { node in
            let payload = node.payload.take()!
            node.next = free
            node.previous = 0
            return payload
        }
        firstFree = number
        if count == 0 {
            owner!.dropNodes()
            chunks.removeLast(chunks.count - 1)
            nodeCount = 0
            firstFree = 0
        }
        return payload
    }

    @inline(__always)
    private mutating func link(_ number: UInt32) {
        let last = tail
        withNode(number) { node in
            node.previous = last
            node.next = 0
        }
        if last != 0 {
            withNode(last) { $0.next = number }
        } else {
            head = number
        }
        tail = number
    }

    @inline(__always)
    private mutating func unlink(_ number: UInt32) {
        let (previous, next) = withNode(number) { ($0.previous, $0.next) }
        if previous != 0 { withNode(previous) { $0.next = next } } else { head = next }
        if next != 0 { withNode(next) { $0.previous = previous } } else { tail = previous }
    }

    /// The first broken link, or nil, after `check` has seen every linked payload in order
    /// (it returns a fault of its own, or nil). For tests; O(count).
    func brokenInvariant(_ check: (UInt32, borrowing Payload) -> String?) -> String? {
        var linked = 0
        var previous: UInt32 = 0
        var number = head
        while number != 0 {
            linked += 1
            let index = Int(number &- 1)
            let node = chunks[index >> Self.chunkShift][index & (Self.chunkCapacity - 1)]
            guard let payload = node.payload else { return "node \(number) is linked without a payload" }
            if node.previous != previous { return "node \(number)'s previous link is not its predecessor" }
            if let fault = check(number, payload) { return fault }
            previous = number
            number = node.next
        }
        if tail != previous { return "the tail is not the last node" }
        if linked != count { return "\(linked) nodes linked, count says \(count)" }
        return nil
    }
}

/// The owner of a `NodeList`'s chunks: frees them, with any payload left in them, when the list
/// goes. Loop thread only, as its list.
final class NodeChunks<Payload> {
    typealias Node = NodeList<Payload>.Node
    var chunks: [UnsafeMutablePointer<Node>] = []
    /// The nodes initialized, in order from the first chunk's first.
    var initialized = 0

    /// Deinitializes the first `count` nodes.
    private func deinitialize(_ count: Int) {
        var left = count
        for chunk in chunks where left > 0 {
            let inChunk = min(left, NodeList<Payload>.chunkCapacity)
            chunk.deinitialize(count: inChunk)
            left -= inChunk
        }
    }

    /// Every node goes (the list emptied: their payloads are nil), and every chunk but the first.
    func dropNodes() {
        deinitialize(initialized)
        initialized = 0
        for chunk in chunks.dropFirst() { chunk.deallocate() }
        chunks.removeLast(chunks.count - 1)
    }

    deinit {
        deinitialize(initialized)
        for chunk in chunks { chunk.deallocate() }
    }
}
