import ArgumentParser
import TaskidServer

// The server's option values, parsed on the command line. Here, not beside the types: the server
// module does not depend on ArgumentParser.

/// `--work`'s values, parsed by `ServerWork(argument:)`; the default shows as its description.
extension ServerWork: ExpressibleByArgument {}

/// `--maxmemory` and the other sizes, in Redis's units (`ByteCount(parsing:)`).
extension ByteCount: ExpressibleByArgument {
    package init?(argument: String) { self.init(parsing: argument) }
}

/// `--client-output-buffer-limit`, parsed by `OutputBufferLimit(argument:)`.
extension OutputBufferLimit: ExpressibleByArgument {}
