import UVLoop

// Clients that are not served: past --max-clients, or from another host in protected mode. Each
// is answered before its connection is closed.
extension RegistryServer {
    /// Logs a client refused by protected mode: the first, then at most one line a second with
    /// how many were refused since (a host trying again and again cannot flood the log).
    /// Front loop only.
    func noteProtectedModeRefusal(of connection: TCPConnection) {
        let now = MonotonicClock.nanoseconds()
        front.value.protectedModeRefusalsUnlogged += 1
        guard now &- front.value.protectedModeLoggedAt >= 1_000_000_000 || front.value.protectedModeLoggedAt == 0
        else { return }
        logger.warning(
            "clients from another host refused: protected mode (no password is set)",
            metadata: [
                "address": "\(connection.peerAddress.map { "\($0)" } ?? "unknown")",
                "refused_since_last_line": "\(front.value.protectedModeRefusalsUnlogged)",
            ])
        front.value.protectedModeLoggedAt = now
        front.value.protectedModeRefusalsUnlogged = 0
    }

    /// The most clients being refused at once (`refuse`). Any thread.
    static let refusalsAtOnce = 16

    /// Answers a client that is not served (past `--max-clients`, or from another host in
    /// protected mode) with `error`, then closes its connection once the client has the answer:
    /// the end of the stream after it, and its requests read and dropped until it closes or
    /// goes quiet (closing with its requests unread would reset the connection, and the reset
    /// can destroy the answer in flight). Over TLS, the handshake comes first, so that the
    /// answer can be read. One second at most. Front loop only.
    func refuse(_ connection: TCPConnection, overTLS: Bool, answering error: String) {
        // Past `refusalsAtOnce` lingering refusals (a peer that trickles bytes keeps one open
        // for its second), the answer is sent as the socket takes it and the connection closed
        // at once: refusing never slows accepting for the clients that are served. (A TLS
        // client gets no answer then: it would need a handshake, which takes round trips.)
        guard front.value.refusals.count < Self.refusalsAtOnce else {
            if overTLS {
                connection.close()
                return
            }
            var reply: [UInt8] = []
            RESPReply.error(error, into: &reply)
            try? connection.send(reply)
            connection.close()
            return
        }
        let number = front.value.nextRefusalNumber
        front.value.nextRefusalNumber += 1
        let clock = frontLoop.clock
        front.value.refusals[number] = Task(executorPreference: frontLoop) {
            var reply: [UInt8] = []
            RESPReply.error(error, into: &reply)
            let answer = Task(executorPreference: self.frontLoop) {
                if overTLS {
                    guard let stream = self.startTLSSession(on: connection) else { return }
                    do { try await stream.handshake() } catch {
                        if let failure = error as? TLSSessionError {
                            self.noteFailedTLSSession(failure, of: connection)
                        }
                        return
                    }
                    try? await stream.write(reply)
                    try? await stream.finishWriting(quietPeriod: .milliseconds(100))
                    await stream.close()
                } else {
                    try? await connection.write(reply)
                    try? await connection.finishWriting(quietPeriod: .milliseconds(100))
                }
            }
            let bound = Task(executorPreference: self.frontLoop) {
                try? await clock.sleep(for: .seconds(1))
                answer.cancel()
            }
            await answer.value
            bound.cancel()
            connection.close()
            self.front.value.refusals[number] = nil
        }
    }
}
