import TaskidCluster

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Whether `--trace FILE` can be written at shutdown, checked when the server starts: a trace
/// recorded for hours and then lost to a typo in its path is worse than a refusal at start.
/// A value type; any thread.
enum TraceFileTarget {
    /// Refuses a path the trace cannot be written to, with the reason: an empty path, a
    /// directory, a device, a FIFO or a socket (only a regular file is written), a directory
    /// that does not exist, or one where the file cannot be created or opened for writing. A
    /// file that does not exist yet is created and removed again, so nothing is left behind.
    /// Never blocks: a FIFO is opened without waiting for a reader. Any thread.
    /// - Throws: `TraceFileTargetError`, whose description names the path and the reason.
    static func check(_ path: String) throws(TraceFileTargetError) {
        guard !path.isEmpty else { throw TraceFileTargetError(path: path, reason: "the path is empty") }
        var status = stat()
        // lstat: a symbolic link whose target is missing exists, and is not removed below.
        let existed = lstat(path, &status) == 0
        if existed, (status.st_mode & S_IFMT) == S_IFLNK, stat(path, &status) != 0 {
            throw TraceFileTargetError(path: path, reason: "a symbolic link to a file that does not exist")
        }
        if existed, (status.st_mode & S_IFMT) != S_IFREG {
            throw TraceFileTargetError(path: path, reason: "not a regular file (\(kind(of: status.st_mode)))")
        }
        // O_NONBLOCK: a FIFO put there since the stat must not block the start.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw TraceFileTargetError(path: path, reason: String(cString: strerror(errno)))
        }
        close(descriptor)
        if !existed { unlink(path) }
    }

    /// The kind of a file that is not a regular one, as `ls -l` would say it.
    private static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a directory"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        default: return "not a plain file"
        }
    }
}

/// A `--trace` path that cannot be written, and why. A value type; any thread.
struct TraceFileTargetError: Error, Equatable, CustomStringConvertible {
    /// The path as given.
    var path: String
    /// Why it cannot be written, e.g. "No such file or directory".
    var reason: String

    var description: String { "--trace '\(QuotedText.excerpt(path))' cannot be written: \(reason)" }
}
