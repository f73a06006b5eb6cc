// The registry is written against the loop contract alone; whoever imports the registry gets
// the contract too (TaskLoop, TestLoop, LoopInstant, …), whichever loop kind it runs on.
@_exported import TaskLoopCore
