"""taskid serve over TLS (--tls-port), driven by redis-cli --tls, redis-py ssl=True and
redis-benchmark --tls, with the test certificates of Tools/Tests/Fixtures/tls: a large value read
back whole, a 20,000-GET MULTI/EXEC, passwords, client certificates required and optional,
--tls-only, the max-clients answer over TLS, and what is refused (a plain-text client, an
unknown CA, a certificate from another CA). Without --short, SET/s over TLS beside
redis-server over TLS and plain TCP, in alternating rounds. Prints `ok: ...` per check and a
`figure:` line per measurement; exits 1 at the first failure. Run by scripts/check-exposure."""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import redis
from taskid_process import TaskidServer, fail, ok

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Fixtures", "tls")


def fixture(name):
    return os.path.join(FIXTURES, name)


class Server(TaskidServer):
    """One taskid serve with a TLS port (the test certificate), started with `options`, on free
    ports; a stop must exit 0."""

    def __init__(self, taskid, options):
        plain = [] if "--tls-only" in options else ["--port", "0"]  # --tls-only binds no plain port
        super().__init__(taskid, [*plain, "--tls-port", "0", "--work", "sleep:1", "--tls-cert-file",
                                  fixture("server.crt"), "--tls-key-file", fixture("server.key"), *options])

    def stop(self):
        super().stop(expect_success=True)


def tls_client(port, **options):
    options.setdefault("socket_timeout", 60)
    return redis.Redis(port=port, ssl=True, ssl_ca_certs=fixture("ca.crt"), **options)


def cli(port, *arguments, certificate=None, ca="ca.crt"):
    command = ["redis-cli", "-p", str(port), "--tls", "--cacert", fixture(ca)]
    if certificate:
        command += ["--cert", fixture(f"{certificate}.crt"), "--key", fixture(f"{certificate}.key")]
    return subprocess.run(command + list(arguments), capture_output=True, text=True, timeout=60)


def refused(call):
    """Whether `call` fails as a refused connection or handshake does."""
    try:
        call()
    except (redis.exceptions.ConnectionError, OSError):
        return True
    return False


def check_server_certificate(taskid, size):
    server = Server(taskid, [])
    try:
        out = cli(server.tls_port, "SET", "k", "v1")
        if out.stdout.strip() != "OK":
            fail(f"redis-cli --tls SET: {out.stdout} {out.stderr}")
        client = tls_client(server.tls_port)
        if not client.ping():
            fail("redis-py ssl=True: no PONG")
        ok("redis-cli --tls --cacert and redis-py ssl=True: served, the server's certificate verified")
        value = os.urandom(size)
        client.set("big", value)
        deadline = time.monotonic() + 120
        while client.get("big") is None:
            if time.monotonic() > deadline:
                fail("the large value never committed")
            time.sleep(0.05)
        if client.get("big")[0] != value:
            fail(f"the {size >> 20} MiB value came back different over TLS")
        ok(f"a {size >> 20} MiB value SET and read back whole over TLS")
        client.set("small", b"x" * 1024)
        deadline = time.monotonic() + 30
        while client.get("small") is None:
            if time.monotonic() > deadline:
                fail("the small value never committed")
            time.sleep(0.01)
        pipe = client.pipeline(transaction=True)
        for _ in range(20_000):
            pipe.get("small")
        answers = pipe.execute()
        if len(answers) != 20_000 or any(a is None or a[0] != b"x" * 1024 for a in answers):
            fail("the 20,000-GET MULTI/EXEC over TLS lost answers")
        ok("redis-py's MULTI/EXEC pipeline of 20,000 GETs over TLS: every answer")
        if not redis.Redis(port=server.port).ping():
            fail("the plain port stopped serving beside the TLS port")
        with socket.create_connection(("127.0.0.1", server.tls_port), timeout=10) as plain:
            plain.sendall(b"PING\r\n")
            try:
                reply = plain.recv(100)
            except ConnectionResetError:
                reply = b""
            if reply.startswith(b"+PONG"):
                fail("a plain-text client was served on the TLS port")
        if not refused(lambda: redis.Redis(port=server.tls_port, ssl=True, ssl_ca_certs=fixture("other-ca.crt"),
                                           socket_timeout=10).ping()):
            fail("a client trusting another CA accepted the server's certificate")
        if "TLS client disconnected" not in server.log_text():
            fail("a refused TLS client was not logged")
        ok("the plain port serves too; a plain-text client and a client of another CA are refused, and logged")
    finally:
        server.stop()


def check_client_certificates(taskid):
    server = Server(taskid, ["--tls-ca-cert-file", fixture("ca.crt")])
    try:
        if not refused(lambda: tls_client(server.tls_port, socket_timeout=10).ping()):
            fail("--tls-ca-cert-file: a client without a certificate was served")
        if not tls_client(server.tls_port, ssl_certfile=fixture("client.crt"), ssl_keyfile=fixture("client.key")).ping():
            fail("a client certificate signed by the CA was refused")
        out = cli(server.tls_port, "PING", certificate="client")
        if out.stdout.strip() != "PONG":
            fail(f"redis-cli --cert: {out.stdout} {out.stderr}")
        out = cli(server.tls_port, "PING", certificate="stranger")
        if out.stdout.strip() == "PONG":
            fail("a certificate of another CA was accepted")
        if "peer did not return a certificate" not in server.log_text():
            fail("the client without a certificate was not logged with the reason")
        ok("--tls-ca-cert-file (auth-clients yes by default): no certificate refused, the CA's served "
           "(redis-py ssl_certfile=, redis-cli --cert), another CA's refused")
    finally:
        server.stop()
    server = Server(taskid, ["--tls-ca-cert-file", fixture("ca.crt"), "--tls-auth-clients", "optional"])
    try:
        if not tls_client(server.tls_port).ping():
            fail("--tls-auth-clients optional: a client without a certificate was refused")
        if cli(server.tls_port, "PING", certificate="stranger").stdout.strip() == "PONG":
            fail("--tls-auth-clients optional: a certificate of another CA was accepted")
        ok("--tls-auth-clients optional: no certificate served, a bad one refused")
    finally:
        server.stop()


def check_passwords_and_limits(taskid):
    server = Server(taskid, ["--requirepass", "s3cret", "--max-clients", "1", "--tls-only"])
    try:
        if server.port != server.tls_port:
            fail(f"--tls-only: the ready line's port {server.port} is not its tls_port {server.tls_port}")
        anonymous = tls_client(server.tls_port)
        try:
            anonymous.ping()
            fail("a TLS command before AUTH was answered")
        except (redis.exceptions.AuthenticationError, redis.exceptions.ResponseError) as error:
            if "Authentication required" not in str(error) and "already authenticated" not in str(error):
                fail(f"before AUTH over TLS: {error}")
        anonymous.close()
        # --max-clients 1: the next client is served only once the server has seen this one go.
        deadline = time.monotonic() + 30
        while True:
            first = tls_client(server.tls_port, password="s3cret", socket_timeout=10)
            try:
                if first.ping():
                    break  # redis-py ssl=True password= logged in; it keeps the one place
            except redis.exceptions.ConnectionError:
                first.close()
            if time.monotonic() > deadline:
                fail("the first client's place was never given back")
            time.sleep(0.05)
        out = cli(server.tls_port, "-a", "s3cret", "--no-auth-warning", "PING")
        if "max number of clients reached" not in out.stdout + out.stderr:
            fail(f"--max-clients 1 over TLS: the second client got {out.stdout!r} {out.stderr!r}")
        first.close()
        ok("--tls-only --requirepass: -NOAUTH, then password= served; past --max-clients a TLS client is "
           "answered -ERR max number of clients reached")
    finally:
        server.stop()


def rounds_of_sets(command, rounds):
    figures = []
    for _ in range(rounds):
        out = subprocess.run(command, capture_output=True, text=True, timeout=300)
        line = [x for x in out.stdout.splitlines() if "requests per second" in x]
        if not line:
            fail(f"{' '.join(command)}: {out.stdout[-300:]} {out.stderr[-300:]}")
        figures.append(float(line[-1].split(":")[1].split()[0]))
    return figures


def measure_sets(taskid, rounds):
    """SET/s over TLS and over plain TCP, taskid serve beside redis-server, alternating."""
    if shutil.which("redis-server") is None:
        print("skip: SET/s beside redis-server: no redis-server here")
        return
    server = Server(taskid, [])
    directory = tempfile.mkdtemp(prefix="redis-tls-")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        redis_tls_port = s.getsockname()[1]
    redis_server = subprocess.Popen(
        ["redis-server", "--port", "0", "--tls-port", str(redis_tls_port), "--tls-cert-file", fixture("server.crt"),
         "--tls-key-file", fixture("server.key"), "--tls-auth-clients", "no", "--save", "", "--appendonly", "no",
         "--dir", directory], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if not refused(lambda: tls_client(redis_tls_port, socket_timeout=1).ping()):
                break
            time.sleep(0.05)
        base = ["redis-benchmark", "-t", "set", "-n", "200000", "-P", "16", "-c", "50", "-r", "100000", "-q",
                "--tls", "--cacert", fixture("ca.crt")]
        taskid_tls, redis_tls = [], []
        for _ in range(rounds):
            taskid_tls += rounds_of_sets(base + ["-p", str(server.tls_port)], 1)
            redis_tls += rounds_of_sets(base + ["-p", str(redis_tls_port)], 1)
        plain = rounds_of_sets(base[:-3] + ["-p", str(server.port)], rounds)

        def summary(figures):
            return f"median {statistics.median(figures):,.0f} (range {min(figures):,.0f}-{max(figures):,.0f})"

        print(f"figure: SET/s over TLS, -P 16 -c 50, {rounds} alternating rounds: taskid serve {summary(taskid_tls)}, "
              f"redis-server {summary(redis_tls)}, ratio {statistics.median(taskid_tls) / statistics.median(redis_tls):.2f}")
        print(f"figure: SET/s over plain TCP on the same taskid serve: {summary(plain)}; TLS costs "
              f"{1 - statistics.median(taskid_tls) / statistics.median(plain):.0%} of it")
        ok("SET/s over TLS measured beside redis-server")
    finally:
        redis_server.terminate()
        redis_server.wait(timeout=20)
        shutil.rmtree(directory, ignore_errors=True)
        server.stop()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--taskid", required=True)
    parser.add_argument("--short", action="store_true", help="smaller sizes and no figures, for CI")
    args = parser.parse_args()
    check_server_certificate(args.taskid, (8 if args.short else 256) << 20)  # both past 1 MiB encrypted at once
    check_client_certificates(args.taskid)
    check_passwords_and_limits(args.taskid)
    if not args.short:
        measure_sets(args.taskid, 5)


if __name__ == "__main__":
    main()
