#!/usr/bin/env python3
"""The example's tracing and metrics check, in two steps around the service's shutdown.

    check_traces.py drive BASE_URL STATE_FILE    while it runs (--latency-ms 400)
    check_traces.py verify SPANS_FILE STATE_FILE after SIGTERM, on what the receiver got

`drive` is one user typing a burst, "s" "sw" "swi" "swif" (one search runs, for "swif", after
the 250 ms debounce), then "swift" while that search runs, which cancels it. Each keystroke is
sent with a W3C `traceparent` header of a trace of its own, as a browser's instrumentation
would, so that `verify` can tell the requests apart. It then scrapes /metrics for the
registry's timers. The trace ids go to STATE_FILE.

`verify` reads the spans the OTLP receiver wrote (scripts/otlp_receiver.py at the repository root; the service exports its
last spans as it shuts down) and checks the chain request -> run -> backend search: the run
for "swif" is the child of its request, links the three requests its debounce merged, and has
a `cancelled` event with reason `identityChanged` and no error status; its backend search is
its child; the run for "swift" is its own request's child and finished.

Every wait has a limit and fails with what it last saw; a search that finished before the
keystroke meant to cancel it (a starved machine) is retried with a new user, not judged.
Exit codes: 0 passed, 1 a check failed, 2 usage.
"""

import json
import os
import sys
import time

from check import Client, Failure, check, wait_until

BURST = ["s", "sw", "swi", "swif"]
BURST_LIMIT_S = 0.2  # the four keystrokes, well inside the 250 ms debounce
ATTEMPTS = 5


def traceparent():
    """A new trace, as a caller's instrumentation would start it: (trace id, header value)."""
    trace_id = os.urandom(16).hex()
    return trace_id, f"00-{trace_id}-{os.urandom(8).hex()}-01"


def keystroke(client, user, query):
    trace_id, header = traceparent()
    client.get("/search", headers={"traceparent": header}, user=user, q=query)
    return trace_id


def drive(base, state_path):
    client = Client(base)
    for attempt in range(1, ATTEMPTS + 1):
        user = f"traced-{os.getpid()}-{attempt}"
        cancelled_before = client.stats()["cancelled"]
        started = time.monotonic()
        burst = [keystroke(client, user, query) for query in BURST]
        if time.monotonic() - started > BURST_LIMIT_S:
            # Slower than the debounce could merge: not the burst this check is about.
            print(f"check_traces: the burst took {time.monotonic() - started:.3f} s; again (attempt {attempt})")
            continue
        # Running, or already over on a starved machine (then this attempt tests nothing).
        state = wait_until(f"{user}'s search for 'swif' running or done", lambda: client.state(user),
                           lambda state: state["phase"] == "running" or state.get("results") is not None)
        if state["phase"] != "running":
            print(f"check_traces: the search for 'swif' ended before it was seen running; again (attempt {attempt})")
            continue
        cancel = keystroke(client, user, "swift")
        wait_until(f"{user}'s results for 'swift'", lambda: client.state(user),
                   lambda state: (state.get("results") or {}).get("query") == "swift")
        if client.stats()["cancelled"] > cancelled_before:
            break
        print(f"check_traces: the search for 'swif' ended before 'swift' was typed; again (attempt {attempt})")
    else:
        raise Failure(f"no burst with a running search to cancel in {ATTEMPTS} attempts")
    with open(state_path, "w", encoding="utf-8") as state:
        json.dump({"user": user, "burst": burst, "cancel": cancel}, state)
    print(f"ok: {user} typed {' '.join(BURST)} then swift, cancelling the running search")

    metrics = client.get_text("/metrics")
    for needle in ('search_time_to_start', 'search_run_duration', 'phase="finished"',
                   'phase="cancelled(identityChanged)"', 'search_loop_lag', 'search_declared'):
        check(needle in metrics, f"/metrics shows no {needle}")
    print("ok: /metrics shows the time to start, the run durations by phase and the loop lag")


def verify(spans_path, state_path):
    with open(state_path, encoding="utf-8") as state:
        state = json.load(state)
    with open(spans_path, encoding="utf-8") as spans_file:
        spans = [json.loads(line) for line in spans_file if line.strip()]
    check(spans, "the receiver got no span")
    check(all(span["service"] == "search-service" for span in spans), "a span of another service")
    by_id = {span["span_id"]: span for span in spans}

    def request(trace_id):
        found = [span for span in spans if span["trace_id"] == trace_id and span["kind"] == "SPAN_KIND_SERVER"]
        check(len(found) == 1, f"one request span in trace {trace_id}, got {len(found)}")
        return found[0]

    def run(identity):
        found = [span for span in spans
                 if span["attributes"].get("task.key") == state["user"]
                 and span["attributes"].get("task.identity") == identity]
        check(len(found) == 1, f"one run span for '{identity}', got {len(found)}: {found}")
        return found[0]

    def child(parent, name):
        found = [span for span in spans if span["parent_span_id"] == parent["span_id"] and span["name"] == name]
        check(len(found) == 1, f"one '{name}' span under {parent['name']} {parent['span_id']}, got {len(found)}")
        return found[0]

    last = request(state["burst"][-1])
    merged = run("swif")
    check(merged["parent_span_id"] == last["span_id"],
          f"the run for 'swif' is not the child of its request ({merged['parent_span_id']} != {last['span_id']})")
    check(merged["trace_id"] == last["trace_id"], "the run for 'swif' is in another trace than its request")
    linked = [link["span_id"] for link in merged["links"]]
    expected = [request(trace_id)["span_id"] for trace_id in state["burst"][:-1]]
    check(linked == expected, f"the run for 'swif' links {linked}, not the merged requests {expected}")
    cancellations = [event for event in merged["events"] if event["name"] == "cancelled"]
    check([event["attributes"].get("task.cancellation_reason") for event in cancellations] == ["identityChanged"],
          f"the run for 'swif' has no cancellation event with its reason: {merged['events']}")
    check(merged["status"] != "ERROR", "a cancelled run has an error status")
    backend = child(merged, "backend search")
    check(backend["attributes"].get("search.query") == "swif", "the cancelled run's backend search has another query")
    print(f"ok: request {last['span_id']} -> run 'swif' {merged['span_id']} (links {len(linked)} requests, "
          f"cancelled(identityChanged)) -> backend search {backend['span_id']}")

    final_request = request(state["cancel"])
    final = run("swift")
    check(final["parent_span_id"] == final_request["span_id"], "the run for 'swift' is not its request's child")
    check(final["status"] == "OK" and final["attributes"].get("task.phase") == "finished",
          f"the run for 'swift' did not finish: {final['status']} {final['attributes']}")
    child(final, "backend search")
    check(final_request["parent_span_id"] and final_request["parent_span_id"] not in by_id,
          "the request span is not the child of the caller's traceparent")
    print(f"ok: request {final_request['span_id']} -> run 'swift' {final['span_id']} (finished) -> backend search")


def main():
    try:
        if len(sys.argv) == 4 and sys.argv[1] == "drive":
            drive(sys.argv[2], sys.argv[3])
        elif len(sys.argv) == 4 and sys.argv[1] == "verify":
            verify(sys.argv[2], sys.argv[3])
        else:
            print(__doc__.strip().splitlines()[2].strip() + "\n" + __doc__.strip().splitlines()[3].strip(),
                  file=sys.stderr)
            sys.exit(2)
    except Failure as failure:
        print(f"check_traces: FAIL: {failure}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
