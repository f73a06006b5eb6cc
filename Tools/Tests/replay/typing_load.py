#!/usr/bin/env python3
"""Typing traffic for `taskid serve`: SESSIONS sessions type queries in bursts (a letter every
30-120 ms, a pause of 1-2 s now and then, a new query after six letters or at random), each
letter a `SET session-N query`, for SECONDS seconds, over one connection. Replies are read as
they come and counted; the run fails if any is not +OK. Prints one line of JSON: the SETs sent.

    typing_load.py PORT SESSIONS SECONDS [SEED]
"""
import heapq
import json
import random
import socket
import sys
import time


def main():
    port, sessions, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 7)
    conn = socket.create_connection(("127.0.0.1", port))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.setblocking(False)
    start = time.monotonic()
    due = [(start + rng.uniform(0, 0.5), s) for s in range(sessions)]
    heapq.heapify(due)
    queries = [""] * sessions
    sent = 0
    pending = b""
    replies = b""
    answered = 0

    def drain():
        nonlocal replies, answered
        while True:
            try:
                chunk = conn.recv(65536)
            except BlockingIOError:
                return
            if not chunk:
                raise SystemExit("typing_load: the server closed the connection")
            replies += chunk
            lines = replies.split(b"\r\n")
            replies = lines.pop()
            for line in lines:
                if line != b"+OK":
                    raise SystemExit(f"typing_load: unexpected reply {line!r}")
                answered += 1

    while due[0][0] < start + seconds:
        when, session = heapq.heappop(due)
        now = time.monotonic()
        if when > now:
            if pending:
                conn.sendall(pending)
                pending = b""
            time.sleep(when - now)
        if len(queries[session]) >= 6 or rng.random() < 0.12:
            queries[session] = ""
        queries[session] += rng.choice("abcdefghijklmnopqrstuvwxyz")
        key, query = f"session-{session}".encode(), queries[session].encode()
        pending += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(query), query)
        sent += 1
        gap = rng.uniform(1.0, 2.0) if rng.random() < 0.1 else rng.uniform(0.03, 0.12)
        heapq.heappush(due, (when + gap, session))
        drain()
    if pending:
        conn.setblocking(True)
        conn.sendall(pending)
        conn.setblocking(False)
    deadline = time.monotonic() + 30
    while answered < sent and time.monotonic() < deadline:
        drain()
        time.sleep(0.01)
    if answered < sent:
        raise SystemExit(f"typing_load: {sent - answered} of {sent} SETs unanswered")
    print(json.dumps({"sets": sent, "seconds": round(time.monotonic() - start, 3)}))


if __name__ == "__main__":
    main()
