#!/usr/bin/env python3
"""Drives a static `taskid serve` cluster with redis-py's cluster clients, in their defaults.

`redis.cluster.RedisCluster` and `redis.asyncio.cluster.RedisCluster` start from one node, learn
the slots with `CLUSTER SLOTS` and the commands' key positions with `COMMAND`, then send each
request to its key's node. Checked, for both: SET, GET, EXISTS, DEL and TASK.PHASE reach the
key's node (and only it holds the key), multi-key DEL and EXISTS are split by slot, a pipeline
spreads over the nodes, a transaction runs on its slot's node, a client started from a node
that does not own a key follows `-MOVED`, and the key positions come from the server's COMMAND.
It prints `ok: ...` per check and exits 1 at the first failure.

    check_cluster.py --ports P1,P2,... [--host HOST]

Only redis-py and the standard library.
"""

import argparse
import asyncio
import socket
import sys
import time

import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot


class CheckFailed(Exception):
    pass


def expect(got, wanted, what):
    if got != wanted:
        raise CheckFailed("%s: got %r, wanted %r" % (what, got, wanted))
    print("ok: %s" % what)


def holders(host, ports, key):
    """The ports of the nodes that hold `key`, asked directly (EXISTS on each node). A node that
    does not own the key's slot answers -MOVED to the owner: checked, and counted as not
    holding it."""
    found = []
    for port in ports:
        r = redis.Redis(host=host, port=port, protocol=2)
        try:
            if r.exists(key) == 1:
                found.append(port)
        except redis.exceptions.MovedError as moved:
            if str(moved) != "%d %s:%d" % (key_slot(key.encode()), host, owner(host, port, key)):
                raise CheckFailed("port %d answered %s for %s" % (port, moved, key))
        finally:
            r.close()
    return found


def total_keys(host, ports):
    total = 0
    for port in ports:
        r = redis.Redis(host=host, port=port, protocol=2)
        total += r.dbsize()
        r.close()
    return total


def owner(host, port, key):
    """The port CLUSTER SLOTS gives for `key`'s slot."""
    r = redis.Redis(host=host, port=port, protocol=2)
    slots = r.execute_command("CLUSTER SLOTS")
    r.close()
    slot = key_slot(key.encode())  # redis-py's own hash slot function
    return next(entry[2][1] for entry in slots if entry[0] <= slot <= entry[1])


def wait_finished(call, key):
    deadline = time.monotonic() + 10
    while call("TASK.PHASE", key) != b"finished":
        if time.monotonic() > deadline:
            raise CheckFailed("%s did not finish its run within 10 s" % key)
        time.sleep(0.005)


def check_sync(host, ports):
    # Started from the last node: most keys are another node's, so the first requests follow
    # the slot map, and the map came from CLUSTER SLOTS.
    rc = RedisCluster(startup_nodes=[ClusterNode(host, ports[-1])])
    expect(sorted(n.port for n in rc.get_primaries()), sorted(ports), "sync: every node is a primary")
    keys = ["user:%d" % n for n in range(30)]
    expect([rc.set(key, "i1") for key in keys], [True] * len(keys), "sync: SET of %d keys" % len(keys))
    for key in keys:
        found = holders(host, ports, key)
        if found != [owner(host, ports[0], key)]:
            raise CheckFailed("sync: %s is held by %s, not by its slot's node alone" % (key, found))
    print("ok: sync: each of %d keys is on its slot's node and no other" % len(keys))
    expect(total_keys(host, ports), len(keys), "sync: the nodes hold %d keys in all" % len(keys))
    wait_finished(rc.execute_command, keys[0])
    expect(rc.get(keys[0]), [b"i1", b"1"], "sync: GET returns [id, generation]")
    expect(rc.exists(*keys), len(keys), "sync: EXISTS over every slot (split by redis-py)")
    pipe = rc.pipeline()
    for key in keys:
        pipe.set(key, "i2")
    expect(pipe.execute(), [True] * len(keys), "sync: a pipeline over every node")
    tx = rc.pipeline(transaction=True)
    tx.set("{order}:a", "1")
    tx.set("{order}:b", "2")
    expect(tx.execute(), [b"OK", b"OK"], "sync: a transaction on one slot")
    expect(rc.delete(*keys), len(keys), "sync: DEL over every slot")
    expect(rc.exists(*keys), 0, "sync: the keys are gone")
    for port in ports:
        one = RedisCluster(host=host, port=port)
        expect(one.set("from:%d" % port, "x"), True, "sync: a client started from port %d routes SET" % port)
        one.close()
    rc.close()


async def check_async(host, ports):
    rc = AsyncRedisCluster(host=host, port=ports[0])
    keys = ["session:%d" % n for n in range(30)]
    for key in keys:
        await rc.set(key, "a1")
    for key in keys:
        found = holders(host, ports, key)
        if found != [owner(host, ports[0], key)]:
            raise CheckFailed("async: %s is held by %s, not by its slot's node alone" % (key, found))
    print("ok: async: each of %d keys is on its slot's node and no other" % len(keys))
    deadline = time.monotonic() + 10
    while await rc.execute_command("TASK.PHASE", keys[0]) != b"finished":
        if time.monotonic() > deadline:
            raise CheckFailed("async: %s did not finish its run" % keys[0])
        await asyncio.sleep(0.005)
    expect(await rc.get(keys[0]), [b"a1", b"1"], "async: GET returns [id, generation]")
    expect(await rc.exists(*keys), len(keys), "async: EXISTS over every slot")
    expect(await rc.delete(*keys), len(keys), "async: DEL over every slot")
    await rc.aclose()


def check_commands(host, port):
    r = redis.Redis(host=host, port=port)
    reply = r.execute_command("COMMAND INFO", "get", "del", "task.phase")
    names = [entry[0] for entry in reply]
    expect(names, [b"get", b"del", b"task.phase"], "COMMAND INFO names the commands")
    positions = [tuple(entry[3:6]) for entry in reply]
    expect(positions, [(1, 1, 1), (1, -1, 1), (1, 1, 1)], "COMMAND gives each command's key positions")
    r.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--ports", required=True)
    args = parser.parse_args()
    ports = [int(p) for p in args.ports.split(",")]
    for port in ports:
        socket.create_connection((args.host, port), timeout=5).close()
    try:
        check_commands(args.host, ports[0])
        check_sync(args.host, ports)
        asyncio.run(check_async(args.host, ports))
    except CheckFailed as failure:
        print("FAIL: %s" % failure)
        return 1
    print("check_cluster: all passed (redis-py %s)" % redis.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
