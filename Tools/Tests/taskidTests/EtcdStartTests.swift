#if Etcd
    import Foundation
    import Testing

    @testable import taskid

    /// `taskid serve --etcd` before it serves: no ready line until it does, what it waits for in
    /// the log, an endpoint that is not etcd named as such, and `--etcd-connect-timeout`'s exit
    /// 69. Without etcd: the endpoints here are a port nothing listens on, and another taskid
    /// serve (which answers an HTTP request with a RESP error).
    @Suite("taskid serve --etcd: starting")
    struct EtcdStartTests {
        @Test func anEndpointThatIsNotEtcdIsNamedAndTheTimeoutExits69() async throws {
            let other = try TaskidProcess(["serve", "--port", "0"])
            let line = try #require(await other.readLine(), "a ready line")
            let port = try JSONDecoder().decode(ReadyLine.self, from: Data(line.utf8)).port
            let node = try TaskidProcess([
                "serve", "--port", "0", "--cluster-node", "n1", "--etcd", "http://127.0.0.1:\(port)",
                "--etcd-connect-timeout", "1",
            ])
            #expect(await node.remainingOutput() == "", "no ready line")
            let log = await node.errorOutput()
            #expect(log.contains("127.0.0.1:\(port) answered, but not as etcd"), "\(log)")
            #expect(log.contains("the node did not register on etcd within --etcd-connect-timeout 1 s"))
            #expect(await node.exit() == (.exit, 69))
            other.send(SIGTERM)
            #expect(await other.exit() == (.exit, 0))
        }

        @Test func etcdDownMeansNoReadyLineAndTheTimeoutExits69() async throws {
            // A port just freed: nothing answers there.
            let probe = try TaskidProcess(["serve", "--port", "0"])
            let line = try #require(await probe.readLine(), "a ready line")
            let port = try JSONDecoder().decode(ReadyLine.self, from: Data(line.utf8)).port
            probe.send(SIGTERM)
            #expect(await probe.exit() == (.exit, 0))
            let node = try TaskidProcess([
                "serve", "--port", "0", "--cluster-node", "n1", "--etcd", "http://127.0.0.1:\(port)",
                "--etcd-connect-timeout", "1",
            ])
            #expect(await node.remainingOutput() == "", "no ready line")
            let log = await node.errorOutput()
            #expect(log.contains("etcd at 127.0.0.1:\(port) is not answering"), "\(log)")
            #expect(log.contains("not serving yet"), "what it waits for")
            #expect(await node.exit() == (.exit, 69))
        }
    }
#endif
