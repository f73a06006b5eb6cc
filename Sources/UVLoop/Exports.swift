// UVLoop is one implementation of the loop contract; whoever imports it gets the contract too
// (TaskLoop, TestLoop, LoopInstant, …), as before the contract had a module of its own.
@_exported import TaskLoopCore
