import UVLoop

/// What the server reads a client's requests from and writes its replies to: a plain TCP
/// connection, or a TLS session over one (`--tls-port`). `RegistryServer.serve` is generic over
/// it, so that each kind gets its own specialized copy and plain TCP pays nothing for TLS.
///
/// The thread of the connection's loop only (the front loop).
package protocol ClientStream: AnyObject {
    /// The TCP connection under the stream (itself, for plain TCP).
    var connection: TCPConnection { get }
    /// Hands the next bytes the client sent to `body`; nil at the end of the stream.
    func read<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result?
    /// Sends `bytes` without waiting; what the socket does not take now is queued.
    func send(_ bytes: [UInt8]) throws
    /// Sends `bytes` and returns once the socket has taken them.
    func write(_ bytes: [UInt8]) async throws
    /// Bytes sent that the socket has not taken yet (over TLS, with those not yet encrypted).
    var queuedWriteBytes: Int { get }
    /// Waits until every byte sent so far has been handed to the kernel.
    func flush() async throws
    /// Ends the stream so that the client receives every byte sent (see
    /// `TCPConnection.finishWriting`).
    func finishWriting(quietPeriod: Duration) async throws
}

extension TCPConnection: ClientStream {
    /// Itself: a plain connection is its own stream. Loop thread only.
    package var connection: TCPConnection { self }
}
