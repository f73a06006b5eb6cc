/// One unit of work for a loop: a job given by the Swift runtime (stored as is, no closure
/// allocated around it) or a closure from `execute`.
///
/// Jobs keep the role they were enqueued in. A job of an actor pinned to the loop arrives
/// through the loop's serial-executor face and runs isolated to it; a job of a task preferring
/// the loop arrives through the loop itself (its task-executor face) and runs with no serial
/// isolation, so that the task's non-isolated code does not hop off an isolation it never asked
/// for (each such hop costs one more job per task).
enum LoopWork {
    case serialJob(UnownedJob)
    case taskJob(UnownedJob)
    case closure(() -> Void)
}

extension LoopWork {
    /// Runs the work on the calling thread, which must be `loop`'s: a serial job isolated to
    /// the loop's serial face, a task job on its task-executor face, a closure as it is.
    @inline(__always)
    func run(on loop: some TaskLoop) {
        switch self {
        case .serialJob(let job): job.runSynchronously(on: loop.asUnownedSerialExecutor())
        case .taskJob(let job): job.runSynchronously(on: loop.asUnownedTaskExecutor())
        case .closure(let closure): closure()
        }
    }
}

/// The serial-executor face of a loop: the identity that `asUnownedSerialExecutor()` hands to
/// actors, so that their jobs arrive apart from the jobs of tasks that prefer the loop.
/// Owned by its loop; actors hold executors unowned, as they do any serial executor.
final class LoopSerialExecutor<Loop: TaskLoop & LoopJobSink>: SerialExecutor, @unchecked Sendable {
    unowned(unsafe) let loop: Loop

    init(loop: Loop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let priority = job.priority.rawValue
        loop.enqueue(.serialJob(UnownedJob(job)), priority: priority)
    }

    func checkIsolated() { loop.preconditionInLoop() }

    func isIsolatingCurrentContext() -> Bool? { loop.inLoop }
}

/// A loop that accepts work items from its executor faces. Internal plumbing.
protocol LoopJobSink: AnyObject {
    func enqueue(_ work: LoopWork, priority: UInt8)
}

/// A growable FIFO ring buffer. Popping and pushing allocate nothing once the buffer has grown
/// to the queue's high-water mark. Shared with the registry module through an SPI, not for
/// users: `package` access would keep its `@inlinable` bodies from reaching that module, and
/// unspecialized it costs a generic-metadata lookup per call (profiled: 40% of a debounced change).
@_spi(TaskIdentityInternals)
public struct RingBuffer<Element> {
    // @inlinable so that other modules (the registry's deadline queues) get it specialized
    // for their element type instead of copying elements through value witnesses.
    @usableFromInline var slots: ContiguousArray<Element?> = []
    @usableFromInline var head = 0
    @usableFromInline var storedCount = 0

    /// An empty buffer; storage is allocated on the first append.
    @inlinable
    public init() {}

    /// The number of elements. O(1).
    @inlinable
    public var count: Int { storedCount }

    /// Whether the buffer holds nothing. O(1).
    @inlinable
    public var isEmpty: Bool { storedCount == 0 }

    /// The oldest element, if any. O(1).
    @inlinable
    public var first: Element? { storedCount == 0 ? nil : slots[head] }

    /// `body` applied to the oldest element where it lies, or nil if there is none. O(1).
    /// Reading a field this way loads just that field; `first?.field` copies the whole element
    /// first (the optimizer keeps that copy), retaining and releasing every reference in it.
    /// `body` may only read through the pointer, and must neither keep it nor change the buffer.
    @inlinable
    public func withFirst<Result>(_ body: (UnsafePointer<Element>) -> Result) -> Result? {
        guard storedCount > 0 else { return nil }
        return slots.withUnsafeBufferPointer { buffer in
            // An `Optional`'s payload lies at its start (Swift's single-payload enum layout),
            // and this slot holds a value: its address is the element's.
            body(UnsafeRawPointer(buffer.baseAddress! + head).assumingMemoryBound(to: Element.self))
        }
    }

    /// Appends at the back. Amortised O(1).
    @inlinable
    public mutating func append(_ element: Element) {
        if storedCount == slots.count { grow() }
        slots[(head &+ storedCount) & (slots.count &- 1)] = element
        storedCount &+= 1
    }

    /// Removes and returns the oldest element. O(1).
    @inlinable
    public mutating func popFirst() -> Element? {
        guard storedCount > 0 else { return nil }
        let element = slots[head].take()
        head = (head &+ 1) & (slots.count &- 1)
        storedCount &-= 1
        return element
    }

    @inlinable
    mutating func grow() {
        // Capacity stays a power of two so that wrapping is a mask.
        let newCapacity = Swift.max(16, slots.count * 2)
        var newSlots = ContiguousArray<Element?>(repeating: nil, count: newCapacity)
        for offset in 0..<storedCount {
            newSlots[offset] = slots[(head + offset) & (slots.count - 1)].take()
        }
        slots = newSlots
        head = 0
    }
}

typealias WorkRing = RingBuffer<LoopWork>

/// Work ordered by task priority: the highest non-empty band runs first, FIFO within a band.
///
/// Four bands are enough to honour Swift's named priorities (`.high`/`.userInitiated` and
/// above, `.medium` and unspecified, `.low`/`.utility`, `.background`); finer ordering inside a
/// band would cost a heap operation per job.
struct PriorityWorkQueue {
    private var bands = (WorkRing(), WorkRing(), WorkRing(), WorkRing())
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The band of a raw `JobPriority` value (0 means unspecified and counts as medium).
    @inline(__always)
    static func band(of priority: UInt8) -> Int {
        if priority >= TaskPriority.high.rawValue { return 0 }
        if priority >= TaskPriority.medium.rawValue || priority == 0 { return 1 }
        if priority >= TaskPriority.low.rawValue { return 2 }
        return 3
    }

    @inline(__always)
    mutating func append(_ work: LoopWork, priority: UInt8) {
        switch Self.band(of: priority) {
        case 0: bands.0.append(work)
        case 1: bands.1.append(work)
        case 2: bands.2.append(work)
        default: bands.3.append(work)
        }
        count &+= 1
    }

    @inline(__always)
    mutating func popFirst() -> LoopWork? {
        guard count > 0 else { return nil }
        count &-= 1
        if !bands.0.isEmpty { return bands.0.popFirst() }
        if !bands.1.isEmpty { return bands.1.popFirst() }
        if !bands.2.isEmpty { return bands.2.popFirst() }
        return bands.3.popFirst()
    }
}

/// The priority that `execute` closures run at: medium, between tasks of high and low priority.
let closurePriority: UInt8 = TaskPriority.medium.rawValue
