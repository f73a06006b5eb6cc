/// A loop that accepts work items from its executor faces. Internal plumbing.
protocol LoopJobSink: AnyObject {
    func enqueue(_ work: LoopWork, priority: UInt8)
}
