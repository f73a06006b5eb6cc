#!/usr/bin/env python3
"""One redis-py `RedisCluster` client, in its defaults, following a failover of a `taskid serve
--etcd` cluster without being restarted (Tools/Tests/cluster/check_etcd.py drives it).

    check_failover.py --ports P1,P2,... [--host HOST] [--keys N] [--limit SECONDS]

It starts from the given nodes, sets N keys spread over the slots (each answered by its owner),
prints `ready`, and waits for a line on standard input: the caller has killed a node. Then,
with the same client object, it sets every key again until each SET has succeeded once and a
GET of it reads the new id, retrying what fails (a dead node's connection refused, -MOVED,
-CLUSTERDOWN while a block is unowned, and redis-py's own RedisClusterException when it reads
the map while some blocks have no owner yet), for at most --limit seconds. It prints
`ok: ... after S s` and exits 0, or says what it last saw and exits 1.

Only redis-py and the standard library.
"""

import argparse
import sys
import time

import redis
from redis.cluster import ClusterNode, RedisCluster


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ports", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--limit", type=float, default=20.0)
    args = parser.parse_args()
    nodes = [ClusterNode(args.host, int(port)) for port in args.ports.split(",")]
    client = RedisCluster(startup_nodes=nodes)
    keys = [f"rp:{index}" for index in range(args.keys)]
    for key in keys:
        client.set(key, "before")
    print("ready", flush=True)
    sys.stdin.readline()  # the node is dead

    started = time.monotonic()
    pending = set(keys)
    last_error = None
    while pending and time.monotonic() - started < args.limit:
        for key in list(pending):
            try:
                client.set(key, "after")
                value = client.get(key)
            # Retried: the map is moving. RedisClusterException is not a RedisError: redis-py raises
            # it when the map it reads again does not cover every slot (require_full_coverage).
            except (redis.exceptions.RedisError, redis.exceptions.RedisClusterException) as error:
                last_error = f"{type(error).__name__}: {error}"
                continue
            if value is not None and value[0] == b"after":
                pending.discard(key)
        if pending:
            time.sleep(0.05)
    elapsed = time.monotonic() - started
    if pending:
        print(f"check_failover: {len(pending)} of {len(keys)} keys still failing after {elapsed:.1f} s; "
              f"last error: {last_error}", file=sys.stderr)
        return 1
    print(f"ok: one RedisCluster client, never restarted, set and read all {len(keys)} keys again "
          f"{elapsed:.2f} s after the kill")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
