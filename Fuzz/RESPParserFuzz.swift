// libFuzzer target for the RESP request parser (Tools/Sources/TaskidRESP/RESPParser.swift), built by
// scripts/fuzz with `swiftc -sanitize=fuzzer,address`. It feeds the input in two pieces (split
// where the first byte says) and checks what the parser promises: it never crashes, every
// request it returns respects the limits, and a protocol error is final.

/// libFuzzer's entry point: parses one input; traps if the parser breaks a promise.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRESPParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limits = RESPLimits(maxBulkBytes: 1024, maxQueryBufferBytes: 4096, maxArguments: 64)
    var parser = RESPParser(limits: limits)
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    for piece in [bytes[..<split], bytes[split...]] {
        parser.feed(piece)
        var request: [ArraySlice<UInt8>] = []
        do {
            while try parser.next(into: &request) {
                precondition(!request.isEmpty, "an empty request was returned")
                precondition(request.count <= limits.maxArguments, "argument limit exceeded")
                precondition(request.reduce(0) { $0 + $1.count } <= limits.maxQueryBufferBytes, "size limit exceeded")
                // A bulk is held to the bulk limit; an inline word only to the inline line's.
                let longest = max(limits.maxBulkBytes, min(RESPLimits.maxInlineBytes, limits.maxQueryBufferBytes))
                precondition(request.allSatisfy { $0.count <= longest }, "argument limit exceeded")
            }
        } catch {
            return 0  // a protocol error closes the connection; nothing more is parsed
        }
        precondition(parser.pendingBytes <= bytes.count, "the parser invented bytes")
    }
    return 0
}
