import TaskidCluster
import TaskidRESP
import UVLoop

// Clients that are not served: past --max-clients, or from another host in protected mode. Each
// is answered before its connection is closed.
extension RegistryServer {
    /// Logs a client refused by protected mode: the first, then at most one line a second with
    /// how many were refused since (a host trying again and again cannot flood the log).
    /// Front loop only.
    func noteProtectedModeRefusal(of connection: TCPConnection) {
        guard let refused = front.value.protectedModeLog.note(at: MonotonicClock.nanoseconds()) else { return }
        logger.warning(
            "clients from another host refused: protected mode (no password is set)",
            metadata: [
                "address": "\(connection.peerAddress.map { "\($0)" } ?? "unknown")",
                "refused_since_last_line": "\(refused)",
            ])
    }

    /// The most clients being refused at once (`refuse`). Any thread.
    static let refusalsAtOnce = 16

    /// Answers a client that is not served (past `--max-clients`, or from another host in
    /// protected mode) with `error`, then closes its connection once the client has the answer:
    /// the end of the stream after it, and its requests read and dropped until it closes or
    /// goes quiet (closing with its requests unread would reset the connection, and the reset
    /// can destroy the answer in flight). Over TLS, the handshake comes first, so that the
    /// answer can be read. The handshake is bounded by `refusalHandshakeTimeLimit` and the
    /// answer by `refusalAnswerTimeLimit`. Front loop only.
    func refuse(_ connection: TCPConnection, overTLS: Bool, answering error: String) {
        // Past `refusalsAtOnce` lingering refusals (a peer that trickles bytes keeps one open
        // for its time limit), the answer is sent as the socket takes it and the connection
        // closed at once: refusing never slows accepting for the clients that are served. (A
        // TLS client gets no answer then: it would need a handshake, which takes round trips.)
        var reply: [UInt8] = []
        RESPReply.error(error, into: &reply)
        guard front.value.refusals.count < Self.refusalsAtOnce else {
            if !overTLS { try? connection.send(reply) }
            connection.close()
            return
        }
        let number = front.value.nextRefusalNumber
        front.value.nextRefusalNumber += 1
        front.value.refusals[number] = Task(executorPreference: frontLoop) {
            await self.answerRefused(connection, overTLS: overTLS, with: reply)
            connection.close()
            self.front.value.refusals[number] = nil
        }
    }

    /// The body of `refuse`: the handshake and the answer, each within its limit. Front loop only.
    private func answerRefused(_ connection: TCPConnection, overTLS: Bool, with reply: [UInt8]) async {
        let answerLimit = configuration.refusalAnswerTimeLimit
        guard overTLS else {
            await withTimeLimit(answerLimit) {
                try? await connection.write(reply)
                try? await connection.finishWriting(quietPeriod: .milliseconds(100))
            }
            return
        }
        guard let stream = startTLSSession(on: connection) else { return }
        // Past its limit the handshake is cancelled, and fails.
        let handshakeError = await withTimeLimit(configuration.refusalHandshakeTimeLimit) {
            () async -> (any Error)? in
            do { try await stream.handshake() } catch { return error }
            return nil
        }
        if let handshakeError {
            if let failure = handshakeError as? TLSSessionError { noteFailedTLSSession(failure, of: connection) }
            return
        }
        await withTimeLimit(answerLimit) {
            try? await stream.write(reply)
            try? await stream.finishWriting(quietPeriod: .milliseconds(100))
            await stream.close()
        }
    }

    /// Runs `body` in a task on the front loop, cancelled once `limit` has passed, or when the
    /// caller is (the server stopping); returns its result (cancelled work returns promptly).
    /// Front loop only.
    @discardableResult
    private func withTimeLimit<Result: Sendable>(
        _ limit: Duration, _ body: @escaping @Sendable () async -> Result
    ) async -> Result {
        let work = Task(executorPreference: frontLoop) { await body() }
        let clock = frontLoop.clock
        let bound = Task(executorPreference: frontLoop) {
            try? await clock.sleep(for: limit)
            work.cancel()
        }
        defer { bound.cancel() }
        return await withTaskCancellationHandler {
            await work.value
        } onCancel: {
            work.cancel()
        }
    }
}
