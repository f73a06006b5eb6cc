#!/usr/bin/env python3
"""`taskid serve --etcd` end to end: etcd and N nodes on loopback, the slot map on leases.

    check_etcd.py TASKID [--nodes N] [--lease SECONDS]
    check_etcd.py TASKID --throughput ROUNDS [--nodes N] [--requests N]

Starts etcd (a data directory of its own, free ports) and N nodes (default 4) with
`--etcd`, then checks, each step with its figure:
  1. the nodes share the 16,384 slots evenly, by etcd's map (CLUSTER SLOTS), and every key is
     answered by its owner (-MOVED elsewhere);
  2. a node stopped with SIGTERM hands its slots over before it exits (exit 0): the others
     serve them within a fraction of the lease, and empty (a key set on the old owner reads
     nil: identities are not replicated, and never an old one);
  3. a node SIGKILLed (not restarted) loses its slots when its lease expires: every one of its
     slot blocks is served by a survivor within the lease time plus 1 s, measured per block;
     redis-py's RedisCluster (when scripts/check-redis-py made its venv) and a redis-cli -c,
     both started before the kill and kept, then set the dead node's keys on the new owners;
  4. a node joining takes its share;
  5. a node paused (SIGSTOP) for longer than its lease never answers for its old slots once it
     runs again: the survivors own them by then, and it answers -MOVED or -CLUSTERDOWN, never a
     value; a redis-benchmark --cluster started before the pause follows the slots away and
     back (it reads the map again, and its requests reach every node afterwards);
  6. a second node started under a live node's id exits 64 and names the holder's address, and
     the first node's slots stay in every node's map;
  7. a node started while etcd is down prints no ready line; once etcd is back it registers,
     takes its share, and only then prints its ready line.
With --throughput, instead: N nodes on etcd beside N nodes of a static cluster file with the
same share of slots each, and redis-benchmark --cluster (50 clients, -P 16, random keys) against
each in turn, the order flipping every round: SET and GET requests per second, the medians, and
the ratio etcd / static per round (etcd is off the request path: the goal is >= 0.95).
Every wait is bounded and fails with what it last saw. Stops every process it started.
Exit codes: 0 passed, 1 a check failed, 2 usage, 3 could not set up.
"""

import argparse
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
sys.path.insert(0, HERE)
import cluster_load  # noqa: E402  (the shared RESP client, beside this file)
Connection, RespError, key_slot, free_ports = (
    cluster_load.Connection, cluster_load.RespError, cluster_load.key_slot, cluster_load.free_ports)

SLOTS = 16384
BLOCKS = 128
SLOTS_PER_BLOCK = SLOTS // BLOCKS
WAIT_S = 30.0


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def wait_for(what, read, done, limit=WAIT_S, poll=0.02):
    deadline = time.monotonic() + limit
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise Failure(f"{what}: not within {limit:.0f} s; last seen {value}")
        time.sleep(poll)


def call(port, *args):
    """One command on a fresh connection; a RespError or a value, or the OSError."""
    try:
        connection = Connection(port, timeout=2.0)
    except OSError as error:
        return error
    try:
        return connection.call(*args)
    except (OSError, cluster_load.Closed) as error:
        return error
    finally:
        connection.close()


def fencing_token(port, key):
    """The fencing token TASK.INFO gives `key` on `port`: (claim revision, generation)."""
    reply = call(port, "TASK.INFO", key)
    fields = dict(zip(reply[::2], reply[1::2]))
    token = fields.get(b"fencing_token")
    check(token is not None, f"TASK.INFO {key} on {port} has no fencing token: {reply}")
    claim, generation = token.split(b".")
    return (int(claim), int(generation))


def slot_owners(port):
    """{slot-range start: port} from CLUSTER SLOTS on `port`, as a list of (first, last, port)."""
    reply = call(port, "CLUSTER", "SLOTS")
    if not isinstance(reply, list):
        return []
    return [(entry[0], entry[1], entry[2][1]) for entry in reply]


def owner_of(slot, owners):
    for first, last, port in owners:
        if first <= slot <= last:
            return port
    return None


def key_in_block(block, tag=""):
    """A key whose slot lies in `block`."""
    index = 0
    while True:
        key = f"k{tag}:{block}:{index}"
        if key_slot(key) // SLOTS_PER_BLOCK == block:
            return key
        index += 1


class Etcd:
    """One etcd member on loopback, with a data directory of its own; `kill` and `start` restart
    it on the same ports and data (the chaos run's etcd restart)."""

    def __init__(self, directory):
        self.client_port, self.peer_port = free_ports(2)
        self.url = f"http://127.0.0.1:{self.client_port}"
        self.directory = directory
        self.log = open(os.path.join(directory, "etcd.log"), "w")
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            ["etcd", "--data-dir", os.path.join(self.directory, "etcd-data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer_port}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer_port}",
             "--initial-cluster", f"default=http://127.0.0.1:{self.peer_port}"],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=cluster_load.die_with_parent)
        try:
            wait_for("etcd healthy", self.health, lambda ok: ok)
        except Failure:
            self.stop()
            raise

    def health(self):
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=1) as response:
                return b'"true"' in response.read()
        except OSError:
            return False

    def kill(self):
        self.process.kill()
        self.process.wait()

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


STARTED = []  # every node process this run started: all are stopped at the end


class Node:
    def __init__(self, taskid, name, etcd, lease, directory, extra=None, port=None, work=("--work", "sleep:1")):
        self.name = name
        (self.port,) = [port] if port else free_ports(1)
        self.out_path = os.path.join(directory, f"{name}.out")
        self.log_path = os.path.join(directory, f"{name}.log")
        where = extra or ["--etcd", etcd.url, "--etcd-lease-seconds", str(lease), "--etcd-cluster", "check"]
        verbose = ["--log-level", "trace"] if os.environ.get("KEEP_LOGS") == "1" else []
        self.process = subprocess.Popen(
            [taskid, "serve", "--port", str(self.port), "--cluster-node", name] + list(work) + where + verbose,
            stdout=open(self.out_path, "w"), stderr=open(self.log_path, "w"),
            preexec_fn=cluster_load.die_with_parent)
        STARTED.append(self.process)
        ready = subprocess.run(
            [os.path.join(ROOT, "scripts", "wait-ready"), "--name", name, str(self.process.pid), self.out_path, self.log_path],
            capture_output=True, text=True)
        check(ready.returncode == 0, f"{name} did not start: {ready.stderr}")

    def alive(self):
        return self.process.poll() is None

    def log(self):
        with open(self.log_path) as file:
            return file.read()


class CliSession:
    """One redis-cli -c process, kept for the whole step: a command per line on its stdin, its
    reply read back line by line. It follows -MOVED by itself, saying so on a line of its own
    ("-> Redirected to slot …"), counted in `redirections`."""

    def __init__(self, port):
        self.process = subprocess.Popen(["redis-cli", "-c", "-p", str(port)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        preexec_fn=cluster_load.die_with_parent)
        STARTED.append(self.process)
        self.pending = b""
        self.redirections = 0

    def ask(self, command, limit=10.0):
        self.process.stdin.write(command.encode() + b"\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + limit
        while True:
            line = self.line(command, deadline, limit)
            if not line.startswith("-> Redirected to slot"):
                return line
            self.redirections += 1

    def line(self, command, deadline, limit):
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            check(left > 0, f"redis-cli -c answered nothing to '{command}' within {limit:.0f} s")
            if select.select([self.process.stdout], [], [], left)[0]:
                data = os.read(self.process.stdout.fileno(), 4096)
                if not data:
                    raise Failure(f"redis-cli -c exited ({self.process.wait()}) after '{command}'")
                self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode(errors="replace")

    def close(self):
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            raise Failure("redis-cli -c did not exit within 10 s of the end of its input")


def sets_declared(port):
    """How many SETs the node has taken (INFO's `declared`): the checker's own INFO calls and
    redirected requests do not count."""
    return cluster_load.info_field(port, "declared")


def served_evenly(port, nodes):
    owners = slot_owners(port)
    counts = {}
    for first, last, owner in owners:
        counts[owner] = counts.get(owner, 0) + last - first + 1
    return counts


def run(args, directory):
    etcd = Etcd(directory)
    nodes = [Node(args.taskid, f"node{i}", etcd, args.lease, directory) for i in range(args.nodes)]
    try:
        return steps(args, directory, etcd, nodes)
    finally:
        for process in STARTED:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()
        etcd.stop()


def settled(port, ports):
    """The map covers every slot, over exactly `ports`, evenly, and every node of `ports`
    serves the same map (each has taken in what it claimed)."""
    counts = served_evenly(port, ports)
    same = all(slot_owners(other) == slot_owners(port) for other in ports)
    return (same and sum(counts.values()) == SLOTS and set(counts) == set(ports)
            and max(counts.values()) - min(counts.values()) <= SLOTS_PER_BLOCK, counts)


def steps(args, directory, etcd, nodes):
    lease = args.lease
    ports = [node.port for node in nodes]
    started = time.monotonic()
    _, counts = wait_for("the slots shared by every node", lambda: settled(ports[0], ports), lambda s: s[0])
    print(f"ok: {len(nodes)} nodes share the slots by etcd's map in {time.monotonic() - started:.2f} s: "
          f"{sorted(counts.values())} slots each")

    # 1. Every key answered by its owner; -MOVED from the others.
    owners = slot_owners(ports[0])
    keys = [key_in_block(block, "a") for block in range(BLOCKS)]
    for key in keys:
        owner = owner_of(key_slot(key), owners)
        reply = call(owner, "SET", key, "v1")
        check(reply == b"OK", f"SET {key} on its owner {owner}: {reply}")
        other = next(port for port in ports if port != owner)
        moved = call(other, "GET", key)
        check(isinstance(moved, RespError) and str(moved).startswith(f"MOVED {key_slot(key)} 127.0.0.1:{owner}"),
              f"GET {key} on {other}: {moved}")
    for key in keys:
        owner = owner_of(key_slot(key), owners)
        wait_for(f"{key}'s run finished", lambda: call(owner, "GET", key), lambda r: isinstance(r, list))
    print(f"ok: {len(keys)} keys, one per block, set and read on their owners; -MOVED from the others")

    # 2. SIGTERM hands the slots over before the node exits.
    leaving = nodes[-1]
    their_blocks = [b for b in range(BLOCKS) if owner_of(b * SLOTS_PER_BLOCK, owners) == leaving.port]
    began = time.monotonic()
    leaving.process.send_signal(signal.SIGTERM)
    rest = ports[:-1]
    wait_for("the leaving node's slots served by the others", lambda: settled(rest[0], rest), lambda s: s[0])
    moved_in = time.monotonic() - began
    check(leaving.process.wait(timeout=WAIT_S) == 0, f"{leaving.name} exited {leaving.process.returncode} on SIGTERM")
    check("handed over" in leaving.log(), f"{leaving.name} did not hand over: {leaving.log()[-2000:]}")
    check(moved_in < lease, f"the hand-over took {moved_in:.2f} s, not less than the lease ({lease} s) it saves")
    owners = slot_owners(rest[0])
    for block in their_blocks:
        key = keys[block]
        reply = call(owner_of(key_slot(key), owners), "GET", key)
        check(reply is None, f"{key} on its new owner reads {reply}, not nil: a moved slot starts empty")
    print(f"ok: SIGTERM: {len(their_blocks)} blocks handed over in {moved_in:.2f} s (lease {lease} s), "
          f"exit 0; on the new owners their keys read nil")
    nodes = nodes[:-1]

    # 3. SIGKILL, no restart: each block of the dead node served again within lease + 1 s.
    victim = nodes[-1]
    survivors = [node.port for node in nodes[:-1]]
    owners = slot_owners(survivors[0])
    victim_blocks = [b for b in range(BLOCKS) if owner_of(b * SLOTS_PER_BLOCK, owners) == victim.port]
    probes = {block: key_in_block(block, "k") for block in victim_blocks}
    # A redis-py RedisCluster client, started before the kill, follows it without a restart
    # (Tools/Tests/redis-py/check_failover.py), when redis-py's venv is there.
    redis_py = os.path.join(ROOT, ".build-py", "venv", "bin", "python")
    follower = None
    if os.access(redis_py, os.X_OK):
        follower = subprocess.Popen(
            [redis_py, os.path.join(ROOT, "Tools", "Tests", "redis-py", "check_failover.py"),
             "--ports", ",".join(str(node.port) for node in nodes), "--limit", str(lease + 15)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, preexec_fn=cluster_load.die_with_parent)
        STARTED.append(follower)
        check(follower.stdout.readline().strip() == "ready", "the RedisCluster client did not start")
    # redis-cli -c, started before the kill on a survivor: it keeps one connection and follows
    # -MOVED from there (a node it was sent to that dies is retried at the same address: its
    # design), so it is given a key of that survivor before the kill and the dead node's keys after.
    session = CliSession(survivors[0])
    mine = next(key_in_block(b, "c") for b in range(BLOCKS) if owner_of(b * SLOTS_PER_BLOCK, owners) == survivors[0])
    check(session.ask(f"SET {mine} before") == "OK", "redis-cli -c: SET before the kill")
    # Each probe key run on the victim, with the fencing token its run carries there.
    tokens_before = {}
    for block, key in probes.items():
        check(call(victim.port, "SET", key, "v") == b"OK", f"SET {key} on its owner before the kill")
        tokens_before[block] = fencing_token(victim.port, key)
    killed = time.monotonic()
    victim.process.kill()
    victim.process.wait()
    if follower:
        follower.stdin.write("killed\n")
        follower.stdin.flush()
    back = {}
    deadline = killed + lease + 5
    while len(back) < len(probes) and time.monotonic() < deadline:
        owners = slot_owners(survivors[0])
        for block, key in probes.items():
            if block in back:
                continue
            owner = owner_of(key_slot(key), owners)
            if owner in survivors and call(owner, "SET", key, "x") == b"OK":
                back[block] = time.monotonic() - killed
        time.sleep(0.02)
    check(len(back) == len(probes), f"{len(probes) - len(back)} blocks of the killed node never served again")
    worst = max(back.values())
    check(worst <= lease + 1, f"a block of the killed node was unavailable {worst:.2f} s (lease {lease} s + 1 s)")
    print(f"ok: SIGKILL: its {len(probes)} blocks served by survivors after {min(back.values()):.2f}-{worst:.2f} s "
          f"(goal: <= lease {lease} s + 1 s)")
    owners = slot_owners(survivors[0])
    for block, key in probes.items():
        after = fencing_token(owner_of(key_slot(key), owners), key)
        check(after > tokens_before[block],
              f"{key}: the new owner's fencing token {after} is not above the dead owner's {tokens_before[block]}")
    print(f"ok: the fencing tokens of the dead node's {len(probes)} keys rose on their new owners "
          f"(claim revisions {min(t[0] for t in tokens_before.values())}.. before, "
          f"{min(fencing_token(owner_of(key_slot(k), owners), k)[0] for k in probes.values())}.. after)")
    elsewhere = sum(owner_of(key_slot(key), owners) != survivors[0] for key in probes.values())
    check(elsewhere > 0, "no block of the dead node went to the other survivor: -MOVED is not exercised")
    for key in probes.values():
        reply = session.ask(f"SET {key} after")
        check(reply == "OK", f"redis-cli -c, kept from before the kill, answered '{reply}' to SET {key}")
    check(session.redirections > 0, "redis-cli -c never followed a -MOVED")
    check(session.close() == 0, "redis-cli -c did not exit 0")
    print(f"ok: redis-cli -c, started before the kill and kept, set a key in each of the dead node's {len(probes)} "
          f"blocks on their new owners, following {session.redirections} -MOVED")
    if follower:
        output = follower.stdout.read()
        check(follower.wait(timeout=lease + 30) == 0, f"redis-py's RedisCluster did not follow the failover: {output}")
        print(output.strip())
    else:
        print("skipped: redis-py's RedisCluster across the kill (no .build-py/venv; scripts/check-redis-py makes it)")
    nodes = nodes[:-1]

    # 4. Two nodes join and take their share.
    joined = [Node(args.taskid, f"node{args.nodes + i}", etcd, lease, directory) for i in range(2)]
    nodes += joined
    ports = [node.port for node in nodes]
    began = time.monotonic()
    _, counts = wait_for("the joining nodes' shares", lambda: settled(ports[0], ports), lambda s: s[0])
    print(f"ok: 2 nodes joined; shares {sorted(counts.values())} after {time.monotonic() - began:.2f} s")

    # 5. A node paused past its lease never answers for its old slots, and a block it gets back
    #    starts empty: a key of each of its blocks is set "old" on it, then "new" on the block's
    #    next owner while it is stopped; once it runs again and the shares settle, every key
    #    reads "new" or nil on its owner, never "old".
    paused = nodes[-1]
    others = [node.port for node in nodes if node is not paused]
    owners = slot_owners(others[0])
    paused_blocks = [b for b in range(BLOCKS) if owner_of(b * SLOTS_PER_BLOCK, owners) == paused.port]
    probes = {block: key_in_block(block, "p") for block in paused_blocks}
    for key in probes.values():
        check(call(paused.port, "SET", key, "old") == b"OK", "SET on the node about to pause")
    for key in probes.values():
        wait_for("its run finished", lambda: call(paused.port, "GET", key), lambda r: isinstance(r, list))
    # redis-benchmark --cluster pins each of its clients to a node it found at start, reads the
    # map again on -MOVED or -CLUSTERDOWN, and exits when a connection closes or the map names a
    # node it did not know (its design): a pause past the lease moves slots away from a node and
    # back without either, so it runs across this one and must follow it.
    benchmark_log = os.path.join(directory, "redis-benchmark.err")
    bench = subprocess.Popen(
        ["redis-benchmark", "--cluster", "-p", str(others[0]), "-c", str(2 * len(nodes)), "-n", "2000000000",
         "-r", "100000", "-t", "set", "-q"], stdout=subprocess.DEVNULL, stderr=open(benchmark_log, "w"),
        preexec_fn=cluster_load.die_with_parent)
    STARTED.append(bench)
    before = {node.port: wait_for("redis-benchmark's first requests", lambda: sets_declared(node.port),
                                  lambda n: n is not None and n > 1000) for node in nodes}
    paused.process.send_signal(signal.SIGSTOP)
    wait_for("the paused node's slots taken by the others", lambda: settled(others[0], others), lambda s: s[0],
             limit=lease + 10)
    owners = slot_owners(others[0])
    for key in probes.values():
        check(call(owner_of(key_slot(key), owners), "SET", key, "new") == b"OK", f"SET {key} on its new owner")
    paused.process.send_signal(signal.SIGCONT)
    reply = call(paused.port, "GET", probes[paused_blocks[0]])
    check(isinstance(reply, RespError) and (str(reply).startswith("MOVED") or str(reply).startswith("CLUSTERDOWN")),
          f"the node woken past its lease answered {reply} for a slot it no longer owns")
    ports = [node.port for node in nodes]
    wait_for("the woken node back in the shares", lambda: settled(ports[0], ports), lambda s: s[0])
    owners = slot_owners(ports[0])
    regained = 0
    for block, key in probes.items():
        owner = owner_of(key_slot(key), owners)
        regained += owner == paused.port
        value = wait_for(f"{key} answered by its owner", lambda: call(owner, "GET", key),
                         lambda r: r is None or isinstance(r, list))
        check(value is None or value[0] == b"new", f"{key} reads {value} on {owner}: an old id after a move")
    print(f"ok: SIGSTOP past the lease: its slots moved; woken, it answered '{str(reply)[:40]}…'; back in the "
          f"shares it holds {regained} of its old blocks again, each read nil or the newest id, never the old one")
    # redis-benchmark followed: still running, it read the map again, and every node (the woken
    # one too) goes on receiving its requests.
    settled_at = {node.port: sets_declared(node.port) for node in nodes}
    for node in nodes:
        wait_for(f"redis-benchmark's SETs reaching {node.name} after the pause",
                 lambda: sets_declared(node.port), lambda n: n is not None and n > settled_at[node.port] + 1000)
    alive = bench.poll() is None
    # SIGKILL, not SIGINT: what is asserted is already in its log (stderr is unbuffered), and
    # after an error of its own (one CI run: "Server closed the connection" after the pause's
    # -CLUSTERDOWNs) redis-benchmark can ignore SIGINT; a check must not wait on that.
    bench.kill()
    try:
        bench.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise Failure("redis-benchmark did not end within 10 s of SIGKILL")
    with open(benchmark_log) as file:
        said = file.read()
    check(alive, f"redis-benchmark --cluster exited across the pause: {said[-500:]}")
    check("Cluster slots configuration changed" in said, f"redis-benchmark never read the map again: {said[-500:]}")
    print(f"ok: redis-benchmark --cluster, started before the pause and kept, read the map again "
          f"({said.count('configuration changed')} times) and its requests reach every node again "
          f"({sum(settled_at[n.port] - before[n.port] for n in nodes):,} SETs before the shares settled)")

    # 6. One node per id: a second node under a live node's id exits 64 and names the holder.
    holder = nodes[0]
    ports = [node.port for node in nodes]
    owners_before = slot_owners(ports[1])
    (twin_port,) = free_ports(1)
    twin = subprocess.run(
        [args.taskid, "serve", "--port", str(twin_port), "--cluster-node", holder.name, "--work", "sleep:1",
         "--etcd", etcd.url, "--etcd-lease-seconds", str(lease), "--etcd-cluster", "check"],
        capture_output=True, text=True, timeout=60)
    check(twin.returncode == 64, f"a second {holder.name} exited {twin.returncode}: {twin.stderr[-500:]}")
    check(twin.stdout == "", f"a second {holder.name} printed a ready line: {twin.stdout}")
    check(f"127.0.0.1:{holder.port}" in twin.stderr,
          f"a second {holder.name} did not name the holder 127.0.0.1:{holder.port}: {twin.stderr[-500:]}")
    for port in ports:
        mapped = slot_owners(port)
        check(any(owner == holder.port for _, _, owner in mapped),
              f"{holder.name}'s slots left the map of the node on {port} after its twin exited")
    check(settled(ports[0], ports)[0] and slot_owners(ports[1]) == owners_before,
          "the map changed when a second node under a live id tried to start")
    print(f"ok: a second '{holder.name}' exited 64 naming 127.0.0.1:{holder.port}; every map still has its slots")

    # 7. Ready means serving: a node started while etcd is down prints no ready line until etcd
    #    is back and the node serves its share.
    etcd.kill()
    late = LateNode(args.taskid, "late0", etcd, lease, directory)
    time.sleep(2 * lease)  # the wait a ready line must not end (no fixed window races a poll here)
    check(late.ready_line() == "", f"{late.name} printed a ready line with etcd down: {late.ready_line()}")
    check(late.process.poll() is None, f"{late.name} exited with etcd down (no --etcd-connect-timeout)")
    check("not serving yet" in late.log(), f"{late.name} did not say what it waits for: {late.log()[-500:]}")
    etcd.start()
    nodes.append(late)
    ports = [node.port for node in nodes]
    wait_for(f"{late.name}'s ready line", late.ready_line, lambda line: line != "", limit=10 * lease + 20)
    _, counts = wait_for("the shares with the late node", lambda: settled(ports[0], ports), lambda s: s[0])
    check(counts.get(late.port, 0) > 0, f"{late.name} printed its ready line but serves no slot")
    print(f"ok: {late.name}, started with etcd down, printed no ready line for {2 * lease} s; once etcd was back "
          f"it took its share ({counts[late.port]} slots) and printed it")
    return 0


class LateNode(Node):
    """A node whose ready line is not waited for at start (etcd is down)."""

    def __init__(self, taskid, name, etcd, lease, directory):
        self.name = name
        (self.port,) = free_ports(1)
        self.out_path = os.path.join(directory, f"{name}.out")
        self.log_path = os.path.join(directory, f"{name}.log")
        self.process = subprocess.Popen(
            [taskid, "serve", "--port", str(self.port), "--cluster-node", name, "--work", "sleep:1", "--etcd",
             etcd.url, "--etcd-lease-seconds", str(lease), "--etcd-cluster", "check"],
            stdout=open(self.out_path, "w"), stderr=open(self.log_path, "w"), preexec_fn=cluster_load.die_with_parent)
        STARTED.append(self.process)

    def ready_line(self):
        with open(self.out_path) as file:
            return file.read().strip()


def benchmark(port, test, requests):
    """redis-benchmark --cluster against the node on `port`: requests per second of `test`."""
    result = subprocess.run(
        ["redis-benchmark", "--cluster", "-p", str(port), "-c", "50", "-P", "16", "-r", "100000",
         "-n", str(requests), "-t", test, "--csv"], capture_output=True, text=True, timeout=300)
    check(result.returncode == 0, f"redis-benchmark {test} on {port}: {result.stderr[-500:]}")
    for line in result.stdout.splitlines():
        fields = [field.strip('"') for field in line.split(",")]
        if fields and fields[0] == test.upper():
            return float(fields[1])
    raise Failure(f"redis-benchmark printed no {test} figure: {result.stdout[-500:]}")


def throughput(args, directory):
    etcd = Etcd(directory)
    try:
        etcd_nodes = [Node(args.taskid, f"node{i}", etcd, args.lease, directory) for i in range(args.nodes)]
        ports = [node.port for node in etcd_nodes]
        wait_for("the etcd cluster settled", lambda: settled(ports[0], ports), lambda s: s[0])
        # The static cluster: the same share of slots per node, from the etcd cluster's own map.
        owners = slot_owners(ports[0])
        static_ports = free_ports(args.nodes)
        lines = []
        for index, (node, port) in enumerate(zip(etcd_nodes, static_ports)):
            ranges = [f"{first}-{last}" for first, last, owner in owners if owner == node.port]
            lines.append(f"s{index} 127.0.0.1:{port} {' '.join(ranges)}")
        path = os.path.join(directory, "static.conf")
        with open(path, "w") as file:
            file.write("\n".join(lines) + "\n")
        static_nodes = [Node(args.taskid, f"s{i}", etcd, args.lease, directory,
                             extra=["--cluster-config", path], port=port) for i, port in enumerate(static_ports)]
        figures = {(kind, test): [] for kind in ("etcd", "static") for test in ("set", "get")}
        for round_index in range(args.throughput):
            order = [("etcd", ports[0]), ("static", static_nodes[0].port)]
            if round_index % 2:
                order.reverse()
            for test in ("set", "get"):
                for kind, port in order:
                    figures[(kind, test)].append(benchmark(port, test, args.requests))
        for test in ("set", "get"):
            ratios = sorted(e / s for e, s in zip(figures[("etcd", test)], figures[("static", test)]))
            middle = len(ratios) // 2
            etcd_median = sorted(figures[("etcd", test)])[middle]
            static_median = sorted(figures[("static", test)])[middle]
            print(f"{test.upper()}: etcd {etcd_median:,.0f}/s, static {static_median:,.0f}/s, ratio "
                  f"{ratios[middle]:.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f}) over {len(ratios)} rounds")
        return 0
    finally:
        for process in STARTED:
            if process.poll() is None:
                process.kill()
                process.wait()
        etcd.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("taskid")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--lease", type=int, default=2)
    parser.add_argument("--throughput", type=int, default=0)
    parser.add_argument("--requests", type=int, default=200000)
    args = parser.parse_args()
    if args.nodes < (3 if args.throughput else 4):
        print("cluster-etcd: --nodes must be 4 or more (3 with --throughput): the kill must leave two survivors",
              file=sys.stderr)
        return 2
    if shutil.which("etcd") is None:
        print("cluster-etcd: etcd is missing (apt-get install etcd-server)", file=sys.stderr)
        return 3
    directory = tempfile.mkdtemp(prefix="taskid-etcd-")
    keep = os.environ.get("KEEP_LOGS") == "1"
    try:
        return throughput(args, directory) if args.throughput else run(args, directory)
    except Failure as failure:
        print(f"cluster-etcd: FAIL: {failure}", file=sys.stderr)
        print(f"cluster-etcd: logs kept in {directory}", file=sys.stderr)
        directory = None
        return 1
    finally:
        if directory and not keep:
            shutil.rmtree(directory, ignore_errors=True)
        elif directory:
            print(f"cluster-etcd: logs in {directory}")


if __name__ == "__main__":
    sys.exit(main())
