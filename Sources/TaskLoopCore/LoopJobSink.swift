/// A loop that accepts work items from its executor faces. Internal plumbing.
@usableFromInline
package protocol LoopJobSink: AnyObject {
    func enqueue(_ work: LoopWork, priority: UInt8)
    /// The serial face's identity, for running an actor's job isolated to it.
    var unownedSerialExecutor: UnownedSerialExecutor { get }
}
