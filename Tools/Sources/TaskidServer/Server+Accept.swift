import Logging
import UVLoop

// Listening and accepting: the plain TCP port and the TLS port (`--tls-port`), each with its own
// accept loop; both serve the same clients' table, under the same limits.
extension RegistryServer {
    /// Binds the plain port (unless `--tls-only`) and the TLS port, and starts accepting on
    /// each. Front loop only. - Throws: `LoopError` (e.g. `EADDRINUSE`); nothing stays bound then.
    func listen() throws {
        let host = configuration.host
        var plain: TCPListener?
        if configuration.tls?.only != true {
            plain = try frontLoop.listen(host: host, port: configuration.port)
        }
        if let settings = configuration.tls {
            let listener: TCPListener
            do { listener = try frontLoop.listen(host: host, port: settings.port) } catch {
                plain?.close()
                throw error
            }
            boundTLSPort.store(listener.localPort, ordering: .releasing)
            if settings.only { boundPort.store(listener.localPort, ordering: .releasing) }
            front.value.tlsListener = listener
            front.value.tlsAcceptTask = Task(executorPreference: frontLoop) {
                await self.acceptLoop(listener, tls: true)
            }
        }
        if let plain {
            boundPort.store(plain.localPort, ordering: .releasing)
            front.value.listener = plain
            front.value.acceptTask = Task(executorPreference: frontLoop) { await self.acceptLoop(plain, tls: false) }
        }
    }

    /// Accepts until `stop`; over TLS when `tls`. Front loop only.
    private func acceptLoop(_ listener: TCPListener, tls: Bool) async {
        while !front.value.stopping {
            let connection: TCPConnection
            do {
                connection = try await listener.accept()
            } catch is CancellationError {
                return
            } catch {
                // A failed accept (a peer that reset, EMFILE) must not stop the server. Pause
                // a little so that running out of descriptors does not spin the loop.
                if front.value.stopping || !listener.isOpen { return }
                logger.warning("accept failed: \(error)")
                try? await frontLoop.clock.sleep(for: .milliseconds(10))
                continue
            }
            // Accepted just as the stop began: the drain does not know it, so it is not served.
            if front.value.stopping {
                connection.close()
                return
            }
            if front.value.clients.count >= configuration.maxClients {
                refuse(connection, overTLS: tls, answering: "ERR max number of clients reached")
                continue
            }
            if configuration.protectedMode && configuration.access.isOpenToAnyone,
                connection.peerAddress?.isLoopback != true
            {
                noteProtectedModeRefusal(of: connection)
                refuse(connection, overTLS: tls, answering: Self.protectedModeDenial)
                continue
            }
            let id = front.value.nextClientID
            front.value.nextClientID += 1
            let task = Task(executorPreference: frontLoop) {
                if tls {
                    // The session is made here, on the loop that keeps the context.
                    if let stream = self.startTLSSession(on: connection) {
                        await self.serve(stream, id: id)
                        await stream.close()
                    }
                } else {
                    await self.serve(connection, id: id)
                }
                connection.close()
                self.front.value.clients[id] = nil
            }
            front.value.clients[id] = ClientEntry(connection: connection, task: task)
        }
    }

    /// A server session on `connection`, or nil (logged) when OpenSSL cannot make one. Front
    /// loop only.
    func startTLSSession(on connection: TCPConnection) -> TLSConnection? {
        guard let context = front.value.tls else { return nil }
        do { return try TLSConnection(connection, tls: context, loop: frontLoop) } catch {
            logger.error("TLS client not served: \(error)")
            return nil
        }
    }

    /// A TLS client whose session failed (a handshake refused: no certificate, one the CA did
    /// not sign, not TLS at all; or a corrupt record). Logged at info: a scanner must not flood
    /// the log, and the client is told by the alert. Front loop only.
    func noteFailedTLSSession(_ failure: TLSSessionError, of connection: TCPConnection) {
        logger.info(
            "TLS client disconnected: \(failure)",
            metadata: ["address": "\(connection.peerAddress.map { "\($0)" } ?? "unknown")"])
    }
}
