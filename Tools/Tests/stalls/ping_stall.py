"""Another client's longest PING wait while one client runs a big command, against one server.
Prints one line: `<label> <longest wait ms> <command seconds>`. Used by scripts/check-stalls."""

import socket
import sys
import threading
import time


def resp(*arguments):
    out = [b"*%d\r\n" % len(arguments)]
    for argument in arguments:
        out.append(b"$%d\r\n%s\r\n" % (len(argument), argument))
    return b"".join(out)


def exists_request(count):
    keys = b"".join(b"$%d\r\n%d\r\n" % (len(str(i)), i) for i in range(count))
    return b"*%d\r\n$6\r\nEXISTS\r\n" % (count + 1) + keys


def read_reply(sock):
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit("the server closed the connection")
        data += chunk
    return data


def main():
    port, label, kind, size = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    request = exists_request(size) if kind == "exists" else resp(b"SET", b"big", b"v" * size)
    pinger = socket.create_connection(("127.0.0.1", port))
    pinger.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    worker = socket.create_connection(("127.0.0.1", port))
    done = threading.Event()
    longest = [0.0]

    def ping():
        while not done.is_set():
            start = time.monotonic()
            pinger.sendall(b"PING\r\n")
            read_reply(pinger)
            longest[0] = max(longest[0], time.monotonic() - start)
            time.sleep(0.001)

    thread = threading.Thread(target=ping)
    thread.start()
    time.sleep(0.05)
    start = time.monotonic()
    worker.sendall(request)
    reply = read_reply(worker)
    took = time.monotonic() - start
    done.set()
    thread.join()
    if not (reply.startswith(b":") or reply.startswith(b"+OK")):
        raise SystemExit(f"{label}: unexpected reply {reply[:100]!r}")
    print(f"{label} {longest[0] * 1000:.1f} {took:.2f}", flush=True)


if __name__ == "__main__":
    main()
