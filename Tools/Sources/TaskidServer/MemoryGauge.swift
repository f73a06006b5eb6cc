import CMallocStats

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The server's memory as INFO reports it and `--maxmemory` bounds it: `used_memory` is what
/// malloc has handed out and not taken back (glibc's `mallinfo2`: small blocks in use plus
/// mmapped ones), the same for every thread, so that the refusal point depends on what the
/// server holds, not on how the kernel counts pages. Reading it walks malloc's arenas, so a
/// write reads the value kept from the last reading, plus the bytes written since; it is read
/// again every `writesPerReading` writes, once the writes since carry more than
/// `bytesPerReading`, and at the first write after a delete. Front loop only (a class owned by
/// the server, touched on its front loop).
package final class MemoryGauge {
    /// `--maxmemory`; 0 for no bound.
    package let maxBytes: Int
    /// `used_memory` at the last reading.
    private(set) var usedBytes = 0
    /// Writes left before the next reading.
    private var writesUntilReading = 0
    /// The bytes of the writes since the last reading: a burst of large values is counted
    /// before malloc's figures are read again (100 MiB values were all let in between two
    /// readings, gigabytes past the bound).
    private var bytesSinceReading = 0
    /// Bytes written that call for a new reading: 1 MiB, or a 256th of the bound if larger,
    /// so the bound is passed by at most that and one value. Any thread.
    let bytesPerReading: Int

    /// Writes between two readings: 1,024 SETs of a few hundred bytes each move the figure by
    /// well under 1% of any useful bound. Any thread.
    static let writesPerReading = 1024

    init(maxBytes: Int) {
        self.maxBytes = maxBytes
        bytesPerReading = max(1 << 20, maxBytes / 256)
    }

    /// Whether a write of `bytes` (its key and value, already in the request's buffer) must be
    /// refused now: a bound is set and used memory is past it (Redis's `noeviction`), counting
    /// the writes let in since the last reading. Inlined: without a bound it is one comparison
    /// per SET.
    @inline(__always)
    package func refusesWrite(of bytes: Int) -> Bool {
        guard maxBytes > 0 else { return false }
        bytesSinceReading += bytes
        // The reading counts this write's bytes (they are in the request's buffer).
        if writesUntilReading <= 0 || bytesSinceReading > bytesPerReading { read() }
        writesUntilReading -= 1
        guard usedBytes + bytesSinceReading <= maxBytes else {
            bytesSinceReading -= min(bytes, bytesSinceReading)  // refused: not stored
            return true
        }
        return false
    }

    /// Memory was freed (a delete): the next write reads malloc's figures again, so that a
    /// bound reached a moment ago lets writes in as soon as there is room.
    package func noteFreed() { writesUntilReading = 0 }

    /// Takes malloc's figures now, and returns them.
    @discardableResult
    package func read() -> MemoryFigures {
        let figures = MemoryFigures.now()
        usedBytes = figures.usedBytes
        writesUntilReading = Self.writesPerReading
        bytesSinceReading = 0
        return figures
    }
}

/// One reading of the process's memory. A value type; any thread.
package struct MemoryFigures: Equatable {
    /// Bytes malloc has handed out (`mallinfo2`'s `uordblks + hblkhd`).
    package var usedBytes: Int
    /// Bytes malloc holds free, not returned to the system (`fordblks`).
    package var freeHeldBytes: Int
    /// The resident set (`/proc/self/statm`), 0 where it cannot be read.
    package var residentBytes: Int

    /// The figures now. Any thread.
    package static func now() -> MemoryFigures {
        var used = 0
        var freeHeld = 0
        taskid_malloc_figures(&used, &freeHeld)
        return MemoryFigures(usedBytes: used, freeHeldBytes: freeHeld, residentBytes: residentSetBytes())
    }

    /// The resident set size from `/proc/self/statm` (its second field, in pages).
    static func residentSetBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var size = 0
        var resident = 0
        guard readTwoFields(file, &size, &resident) else { return 0 }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Reads the first two decimal fields of `file`'s first line.
    private static func readTwoFields(_ file: UnsafeMutablePointer<FILE>, _ first: inout Int, _ second: inout Int)
        -> Bool
    {
        var line = [CChar](repeating: 0, count: 128)
        guard fgets(&line, Int32(line.count), file) != nil else { return false }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let a = Int(fields[0]), let b = Int(fields[1]) else { return false }
        first = a
        second = b
        return true
    }

    /// Whether the resident set is so far above what is in use that malloc's free memory is
    /// worth returning to the system: by more than 32 MiB and more than a quarter of what is in
    /// use. Judged on the resident set, not on malloc's free figure, which a trim does not
    /// lower (the chunks stay free, their pages go): after a trim this turns false, so a
    /// fragmented heap is not trimmed again every second.
    package var worthTrimming: Bool {
        residentBytes > 0 && residentBytes - usedBytes > 32 << 20 && residentBytes - usedBytes > usedBytes / 4
    }

    /// Returns malloc's free memory to the system (`malloc_trim`). Any thread; it locks each
    /// arena in turn, so it is done on a timer, not per request.
    static func trim() { _ = taskid_malloc_trim() }

    /// `used_memory_rss / used_memory`, as INFO's `mem_fragmentation_ratio`.
    package var fragmentationRatio: Double { usedBytes > 0 ? Double(residentBytes) / Double(usedBytes) : 0 }
}
