#!/usr/bin/env python3
"""Many users typing into the search service at once, with an oracle.

    load.py BASE_URL [--users N] [--seconds S] [--seed K] [--self-test]

Each user is an asyncio task with a keep-alive connection of its own and a rhythm of its own
(a typing speed, pauses between words, now and then a backspace), typing words letter by
letter for S seconds and reading its box (`/state`) between keystrokes. Then it stops typing and
waits (bounded) for its box to settle.

The oracle, per user:
  - final: once settled, the box shows the results of the user's last query;
  - stale: every answer the user read is for a query at least as recent as any answer it had
    read before (a search's results are kept until a newer search stores its own, so an older
    query's results appearing after a newer one's is a stale result served).

It prints one `key=value` line: users, keystrokes, reads, requests per second, p50/p99/max
latency of the requests, the searches started, cancelled and finished (from `/stats`), stale
and wrong finals. Standard library only.

`--self-test` first checks the oracle itself on scripted answers (it must flag a stale read).

Exit codes: 0 the oracle holds, 1 it does not (or a request failed, or the self-test failed),
2 usage.
"""

import argparse
import asyncio
import json
import random
import sys
import time
import urllib.parse

WORDS = [
    "search", "select", "season", "sea", "seat", "cancel", "candle", "cannon", "task", "taskbar",
    "identity", "ideal", "loop", "loose", "timer", "timeline", "swift", "swiftly", "debounce",
    "deliver", "stale", "stable", "result", "resolve", "query", "quest",
]
SETTLE_LIMIT_S = 20.0
REQUEST_LIMIT_S = 10.0  # one request (connect, send, answer) longer than this fails the run


class Connection:
    """One keep-alive HTTP/1.1 connection; GET only."""

    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def get(self, path):
        return await asyncio.wait_for(self._get(path), REQUEST_LIMIT_S)

    async def _get(self, path):
        for attempt in (1, 2):
            try:
                if self.writer is None:
                    self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
                request = f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\nConnection: keep-alive\r\n\r\n"
                self.writer.write(request.encode())
                return await self._response()
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt == 2:
                    raise

    async def _response(self):
        status_line = await self.reader.readuntil(b"\r\n")
        status = int(status_line.split()[1])
        length, chunked = 0, False
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.decode().partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if chunked:
            body = b""
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self.reader.readexactly(size + 2)
                if size == 0:
                    break
                body += chunk[:-2]
        else:
            body = await self.reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"answered {status}: {body[:200]!r}")
        return json.loads(body) if body else None

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


class User:
    def __init__(self, name, rng, connection, latencies):
        self.name = name
        self.rng = rng
        self.connection = connection
        self.latencies = latencies
        self.typed = []  # every query typed, in order
        self.newest_read = -1  # index in `typed` of the newest query whose results were read
        self.stale = []
        self.keystrokes = 0
        self.reads = 0
        # A rhythm of its own: seconds between keystrokes, and between words.
        self.key_gap = rng.uniform(0.04, 0.3)
        self.word_gap = rng.uniform(0.2, 1.5)

    async def request(self, path):
        start = time.monotonic()
        answer = await self.connection.get(path)
        self.latencies.append(time.monotonic() - start)
        return answer

    async def type(self, query):
        self.typed.append(query)
        self.keystrokes += 1
        user, q = urllib.parse.quote(self.name), urllib.parse.quote(query)
        await self.request(f"/search?user={user}&q={q}")

    async def read(self):
        self.reads += 1
        state = await self.request(f"/state?user={urllib.parse.quote(self.name)}")
        results = state.get("results")
        if results is not None and results["query"] != "":
            # The newest index that this query had when read: a query typed twice counts as
            # the later one (the conservative reading).
            index = max(i for i, q in enumerate(self.typed) if q == results["query"])
            if index < self.newest_read:
                self.stale.append((results["query"], self.typed[self.newest_read]))
            self.newest_read = max(self.newest_read, index)
        return state

    async def run(self, until):
        while time.monotonic() < until:
            word = self.rng.choice(WORDS)
            query = ""
            for letter in word:
                if query and time.monotonic() >= until:
                    break
                query += letter
                await self.type(query)
                if self.rng.random() < 0.08 and len(query) > 1:  # a typo fixed at once
                    query = query[:-1]
                    await self.type(query)
                await asyncio.sleep(self.key_gap * self.rng.uniform(0.5, 1.5))
                if self.rng.random() < 0.3:
                    await self.read()
            await asyncio.sleep(self.word_gap * self.rng.uniform(0.5, 1.5))
            await self.read()

    async def settle(self):
        """Waits for the box to show the last query's results; returns the last state."""
        deadline = time.monotonic() + SETTLE_LIMIT_S
        while True:
            state = await self.read()
            results = state.get("results") or {}
            if state["phase"] == "finished" and results.get("query") == self.typed[-1]:
                return state
            if time.monotonic() > deadline:
                return state
            await asyncio.sleep(0.05)


class ScriptedConnection:
    """Answers each GET with the next of `states` (for the self-test)."""

    def __init__(self, states):
        self.states = list(states)

    async def get(self, path):
        return self.states.pop(0)

    def close(self):
        pass


def self_test():
    """The oracle on scripted answers: it must flag an older query's results read after a
    newer one's, and pass a box that only moves forward. Returns the failures."""

    def box(query):
        return {"phase": "finished", "results": {"query": query, "matches": []}}

    async def reads(typed, answers):
        user = User("scripted", random.Random(0), ScriptedConnection(answers), [])
        user.typed = typed
        for _ in answers:
            await user.read()
        return user.stale

    failures = []
    typed = ["s", "se", "sea", "sear", "searc", "search"]
    if asyncio.run(reads(typed, [box("sea"), box("search"), box("sea")])) == []:
        failures.append("results for 'sea' read after those for 'search' were not flagged")
    if asyncio.run(reads(typed, [box("se"), box("sea"), box("search"), box("search")])) != []:
        failures.append("a box that only moved forward was flagged")
    # A query typed twice counts as its later typing: reading it after a query typed between
    # the two is not stale.
    if asyncio.run(reads(["sea", "seat", "sea"], [box("seat"), box("sea")])) != []:
        failures.append("a query typed again was flagged")
    return failures


async def main_async(arguments):
    parsed = urllib.parse.urlparse(arguments.base)
    host, port = parsed.hostname, parsed.port
    admin = Connection(host, port)
    before = await admin.get("/stats")
    rng = random.Random(arguments.seed)
    latencies = []
    users = [
        User(f"user{index}", random.Random(rng.random()), Connection(host, port), latencies)
        for index in range(arguments.users)
    ]
    started = time.monotonic()
    until = started + arguments.seconds
    await asyncio.gather(*(user.run(until) for user in users))
    typing_seconds = time.monotonic() - started
    requests_while_typing = len(latencies)
    finals = await asyncio.gather(*(user.settle() for user in users))
    after = await admin.get("/stats")
    wrong = [
        (user.name, user.typed[-1], state["phase"], (state.get("results") or {}).get("query"))
        for user, state in zip(users, finals)
        if state["phase"] != "finished" or (state.get("results") or {}).get("query") != user.typed[-1]
    ]
    stale = [(user.name, entry) for user in users for entry in user.stale]
    latencies.sort()

    def percentile(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1e6

    delta = {key: after[key] - before[key] for key in ("declared", "started", "cancelled", "finished")}
    print(
        f"users={len(users)} seconds={typing_seconds:.1f} keystrokes={sum(u.keystrokes for u in users)} "
        f"reads={sum(u.reads for u in users)} requests_per_s={requests_while_typing / typing_seconds:.0f} "
        f"latency_p50_us={percentile(0.5):.0f} latency_p99_us={percentile(0.99):.0f} "
        f"latency_max_us={latencies[-1] * 1e6:.0f} "
        f"searches_declared={delta['declared']} searches_started={delta['started']} "
        f"searches_cancelled={delta['cancelled']} searches_finished={delta['finished']} "
        f"stale={len(stale)} wrong_finals={len(wrong)}"
    )
    for connection in [admin] + [user.connection for user in users]:
        connection.close()
    for name, (read, newer) in stale[:5]:
        print(f"load: stale: {name} read results for {read!r} after those for {newer!r}", file=sys.stderr)
    for entry in wrong[:5]:
        print(f"load: wrong final (user, last query, phase, results for): {entry}", file=sys.stderr)
    return 0 if not stale and not wrong else 1


def main():
    parser = argparse.ArgumentParser(description="Users typing into the search service, with an oracle.")
    parser.add_argument("base", help="the service's base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--self-test", action="store_true", help="check the oracle on scripted answers, then run")
    arguments = parser.parse_args()
    if arguments.self_test:
        failures = self_test()
        for failure in failures:
            print(f"load: self-test: {failure}", file=sys.stderr)
        if failures:
            return 1
    if arguments.users < 1 or arguments.seconds <= 0:
        parser.error("--users must be at least 1 and --seconds positive")
    try:
        return asyncio.run(main_async(arguments))
    except (OSError, RuntimeError, asyncio.IncompleteReadError, asyncio.TimeoutError) as error:
        print(f"load: a request failed: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
