#!/usr/bin/env python3
"""The end-to-end check of the search service, as one client process that types and polls.

    check.py BASE_URL          e.g. http://127.0.0.1:8080; the service runs with --latency-ms 400

One process and one keep-alive connection, so that a poll costs a request (about a millisecond),
not a process start: a step that needs a search in progress sees it within milliseconds of its
start. Every wait has a time limit and fails with what it last saw; none races a fixed window:
the step that needs a running search checks afterwards that the search really was cancelled
(the service's `cancelled` counter moved), and if the search had already finished when the next
keystroke arrived (a starved machine), it tries again with a new user instead of judging a run
it did not test.

Exit codes: 0 passed, 1 a check failed, 2 usage.
"""

import http.client
import json
import sys
import time
import urllib.parse

WAIT_LIMIT_S = 20.0  # a wait longer than this is a failure (a search takes 0.4 s)
POLL_S = 0.002
TYPIST_ATTEMPTS = 5


class Failure(Exception):
    pass


class Client:
    """One keep-alive HTTP connection to the service."""

    def __init__(self, base):
        parsed = urllib.parse.urlparse(base)
        self.host, self.port = parsed.hostname, parsed.port
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=10)

    def get(self, path, headers=None, **query):
        """GET path?query as JSON (None for an empty body); fails on any status but 200."""
        body = self.fetch(path, headers, **query)
        return json.loads(body) if body else None

    def get_text(self, path):
        """GET path as text; fails on any status but 200."""
        return self.fetch(path, None).decode("utf-8")

    def fetch(self, path, headers, **query):
        url = path + ("?" + urllib.parse.urlencode(query) if query else "")
        for attempt in (1, 2):
            try:
                self.connection.request("GET", url, headers=headers or {})
                response = self.connection.getresponse()
                body = response.read()
                break
            except (ConnectionError, http.client.HTTPException):
                # A keep-alive connection the server closed: reconnect once.
                self.connection.close()
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=10)
                if attempt == 2:
                    raise
        if response.status != 200:
            raise Failure(f"GET {url} answered {response.status}: {body[:200]!r}")
        return body

    def type(self, user, query):
        return self.get("/search", user=user, q=query)

    def state(self, user):
        return self.get("/state", user=user)

    def stats(self):
        return self.get("/stats")


def wait_until(what, read, done):
    """Polls `read()` until `done(value)`; fails after WAIT_LIMIT_S with the last value."""
    deadline = time.monotonic() + WAIT_LIMIT_S
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {WAIT_LIMIT_S:.0f} s; last seen {value}")
        time.sleep(POLL_S)


def check(condition, message):
    if not condition:
        raise Failure(message)


def results_query(state):
    return (state.get("results") or {}).get("query")


def bursts(client):
    print("== bursts: s, se, sea, sear, searc, search, faster than the 250 ms debounce")
    users = ["alice", "bob", "carol", "dave", "erin"]
    for user in users:
        for query in ["s", "se", "sea", "sear", "searc", "search"]:
            client.type(user, query)
    for user in users:
        state = wait_until(f"user {user} finished", lambda: client.state(user), lambda s: s["phase"] == "finished")
        got = (state["query"], results_query(state), "search" in state["results"]["matches"], state["generation"])
        check(got == ("search", "search", True, 6), f"user {user}: (query, results for, found, generation) = {got}")
        print(f"ok: {user} searched once, for 'search'")
    stats = client.stats()
    got = tuple(stats[k] for k in ("declared", "started", "coalesced", "cancelled", "finished"))
    check(got == (30, 5, 25, 0, 5), f"after the bursts, (declared, started, coalesced, cancelled, finished) = {got}")
    print("ok: 30 keystrokes, 5 searches started (one per burst), 25 coalesced")


def typist(client):
    print("== a query typed while a search runs cancels it")
    for attempt in range(1, TYPIST_ATTEMPTS + 1):
        user = f"typist{attempt}"
        before = client.stats()
        client.type(user, "sea")
        state = wait_until(
            f"{user}'s search for 'sea' running",
            lambda: client.state(user),
            lambda s: s["phase"] in ("running", "finished"),
        )
        if state["phase"] == "finished":
            # The search ran and ended between two polls (a starved machine): nothing to cancel.
            print(f"note: {user}'s search for 'sea' ended before a poll saw it running; again")
            continue
        client.type(user, "search")
        seen = []

        def read():
            state = client.state(user)
            seen.append((state["phase"], results_query(state)))
            return state

        wait_until(
            f"{user}'s search for 'search' finished",
            read,
            lambda s: s["phase"] == "finished" and results_query(s) == "search",
        )
        after = client.stats()
        if after["cancelled"] == before["cancelled"]:
            # The search for 'sea' ended before 'search' arrived: it could not be cancelled,
            # and its results were rightly shown. Not the case this step tests.
            print(f"note: {user}'s search for 'sea' finished before the next keystroke arrived; again")
            continue
        check(after["cancelled"] == before["cancelled"] + 1, f"{user}: cancelled moved by more than one: {after}")
        stale = [entry for entry in seen if entry[1] == "sea"]
        check(not stale, f"{user}: the cancelled search's results for 'sea' reached the user: {stale[:3]}")
        got = tuple(after[k] - before[k] for k in ("started", "cancelled", "finished"))
        check(got == (2, 1, 1), f"{user}: (started, cancelled, finished) moved by {got}, expected (2, 1, 1)")
        check(after["runningActions"] == 0, f"{user}: running actions left: {after['runningActions']}")
        print(f"ok: {user}'s search for 'sea' was cancelled while running; only 'search' landed ({len(seen)} polls)")
        return
    raise Failure(f"in {TYPIST_ATTEMPTS} attempts, no search for 'sea' was still running when 'search' arrived")


def main():
    if len(sys.argv) != 2:
        print("usage: check.py BASE_URL", file=sys.stderr)
        return 2
    client = Client(sys.argv[1])
    try:
        bursts(client)
        typist(client)
    except Failure as failure:
        print(f"check-search-service: FAIL: {failure}", file=sys.stderr)
        return 1
    except (OSError, http.client.HTTPException) as error:
        print(f"check-search-service: FAIL: a request failed: {error!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
