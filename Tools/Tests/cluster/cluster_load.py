#!/usr/bin/env python3
"""The load generator and checks of scripts/cluster: a small RESP client on sockets (stdlib only).

  cluster_load.py probe --port P COMMAND...
      sends each COMMAND (one string, split on spaces) on a new connection and prints one line:
      COMMAND -> the reply, or "connection closed" when the server (the proxy) hangs up.

  cluster_load.py free-ports N
      prints N loopback ports, free now, outside the kernel's range for outgoing connections.

  cluster_load.py chaos --taskid PATH --ports P1,P2,... (--proxy P | --cluster-config FILE)
                        [--seconds S] [--interval S] [--downtime S] [--keys N] [--writers N]
                        [--readers N] [--depth N] [--min-kills N] [--log-dir DIR] [--seed N]
      Starts one `taskid serve` node per port (--loops 1 --work sleep:0; with --cluster-config,
      node I is `nodeI` of that file), and for --seconds:
        - writers SET keys k:<n> with ids i<seq> that only grow (each key has one writer), through
          the proxy, or in cluster mode straight to each key's node by its hash slot (a client
          that routes itself, as redis-py's RedisCluster does);
        - readers GET random keys throughout, by the same route;
        - every --interval seconds a node is killed with SIGKILL and started again --downtime
          seconds later on the same port, the nodes taken in turn in a shuffled order, so each
          is killed about as often as the others.
      With --work sleep:0 a SET's run commits in the loop turn after the SET, before the node
      reads any request sent after the SET's reply. So a GET sent after a SET was acknowledged
      must read that id or a later one, unless the key's node was killed since (its results die
      with it: the GET reads nil, or an error while it is down). Checked:
        1. stale reads: 0. A GET never reads an id older than the last one acknowledged before it
           was sent, nor older than one already read for that key;
        2. nil reads only for keys whose node may have died after their last acknowledged SET
           was sent and was up again before the GET's reply (a kill began before the reply,
           its process was reaped after the SET's send, since the signal may land a moment
           after the kill began, and its successor was spawned before the reply);
        3. errors only for keys whose node was down at some time between the request and its
           reply ("inside a failure window"); none outside;
        4. at the end, with every node up and no run left: every key reads its last acknowledged
           id (or a later one, sent and answered with an error), or nil if its node was killed
           since;
        5. every node killed at least --min-kills times, and the last of each stops with exit 0
           on SIGTERM.
      Reports acknowledged SETs, errors inside and outside failure windows, reads, stale and nil
      reads, and each node's resident memory and open descriptors: their slopes (least squares,
      per minute) over each run of the node, the longest run shown. Prints key=value lines;
      exit 0 passed, 1 a check failed, 3 could not set up.
"""

import argparse
import binascii
import collections
import ctypes
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time


class RespError(Exception):
    """An error reply (-ERR ...), kept as a value."""


class Closed(Exception):
    """The peer closed the connection."""


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            arg = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


class Connection:
    def __init__(self, port, timeout=5.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.pos = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        data = self.sock.recv(262144)
        if not data:
            raise Closed()
        if self.pos:
            self.buf = self.buf[self.pos:] + data
            self.pos = 0
        else:
            self.buf += data

    def _line(self):
        while True:
            end = self.buf.find(b"\r\n", self.pos)
            if end >= 0:
                line = self.buf[self.pos:end]
                self.pos = end + 2
                return line
            self._fill()

    def reply(self):
        """One reply: bytes, int, list, None (nil) or a RespError instance."""
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) - self.pos < n + 2:
                self._fill()
            value = self.buf[self.pos:self.pos + n]
            self.pos += n + 2
            return value
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError("bad reply line %r" % line)

    def call(self, *args):
        self.send(encode(args))
        return self.reply()

    def pipeline(self, commands, chunk=500):
        replies = []
        for start in range(0, len(commands), chunk):
            part = commands[start:start + chunk]
            self.send(b"".join(encode(c) for c in part))
            replies.extend(self.reply() for _ in part)
        return replies


def show(value):
    if isinstance(value, RespError):
        return "-" + str(value)
    if isinstance(value, bytes):
        return repr(value.decode(errors="replace"))
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return repr(value)


def probe(args):
    for command in args.command:
        parts = command.split()
        try:
            conn = Connection(args.port, timeout=2.0)
        except OSError as error:
            print("%s -> cannot connect: %s" % (command, error))
            return 3
        try:
            value = conn.call(*parts)
            print("%s -> %s" % (command, show(value)))
        except (Closed, ConnectionResetError):
            print("%s -> connection closed" % command)
        except socket.timeout:
            print("%s -> no reply" % command)
        finally:
            conn.close()
    return 0


# ---- chaos -------------------------------------------------------------------------------


def info_field(port, field):
    """One integer field of a node's INFO, on a new connection; None when it does not answer."""
    try:
        conn = Connection(port, timeout=2.0)
    except OSError:
        return None
    try:
        reply = conn.call("INFO")
    except (OSError, Closed):
        return None
    finally:
        conn.close()
    if not isinstance(reply, bytes):
        return None
    return int(reply.decode().split("\r\n%s:" % field)[1].split("\r\n")[0])


def key_slot(key):
    """Redis Cluster's hash slot: CRC16/XMODEM of the key, or of its {hash tag}, mod 16384."""
    data = key.encode() if isinstance(key, str) else key
    start = data.find(b"{")
    if start >= 0:
        end = data.find(b"}", start + 1)
        if end > start + 1:
            data = data[start + 1:end]
    return binascii.crc_hqx(data, 0) & 16383


def die_with_parent():
    """In a node's process before it runs taskid: SIGKILL it when this script dies, however
    this script dies (Linux's PR_SET_PDEATHSIG), so that no node outlives a run."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


def free_ports(count):
    """`count` loopback ports that can be bound now, outside the kernel's range of ports for
    outgoing connections: a node restarted on its port must not find it taken by a client's
    connection meanwhile."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as file:
        low, high = (int(v) for v in file.read().split())
    candidates = [p for p in range(10000, 65535) if not low <= p <= high]
    random.shuffle(candidates)
    ports = []
    for port in candidates:
        probe = socket.socket()
        try:
            probe.bind(("127.0.0.1", port))
            ports.append(port)
        except OSError:
            continue
        finally:
            probe.close()
        if len(ports) == count:
            return ports
    raise RuntimeError("no %d free ports outside %d-%d" % (count, low, high))


# The wait for a server's ready line, shared with the bash scripts.
WAIT_READY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "wait-ready")


class Node:
    """One `taskid serve` process on a fixed port, killed and started again by the chaos."""

    def __init__(self, index, port, argv, log_path):
        self.index, self.port, self.argv, self.log_path = index, port, argv, log_path
        self.process = None
        self.lock = threading.Lock()
        # One record a kill: [began, reaped, successor spawned, successor ready] (None until
        # then). The process may have died at any time between the first two, and answered
        # requests until it did; a request answered after the third may have reached its
        # successor; the node is down (requests may fail) from the first to the fourth.
        self.kill_records = []
        self.runs = []           # per process: [(time, rss bytes, open fds)]

    def start(self):
        """Starts the node and waits for its ready line (scripts/wait-ready: the one owner of
        that wait) on a fresh standard-output file, so that the previous run's line cannot
        pass for this one's."""
        out_path = os.path.splitext(self.log_path)[0] + ".out"
        # The new process may answer from its spawn on, before its ready line is seen: its
        # spawn is recorded before it exists, so that a reader that gets its answer already
        # sees it (recording it after the ready line made such answers look unexplained).
        with self.lock:
            if self.kill_records and self.kill_records[-1][2] is None:
                self.kill_records[-1][2] = time.monotonic()
        with open(self.log_path, "ab") as log, open(out_path, "wb") as out:
            process = subprocess.Popen(self.argv, stdout=out, stderr=log, stdin=subprocess.DEVNULL,
                                       preexec_fn=die_with_parent)
        name = "node %d (port %d)" % (self.index + 1, self.port)
        waited = subprocess.run([WAIT_READY, "--name", name, str(process.pid), out_path, self.log_path],
                                stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        if waited.returncode != 0:  # wait-ready has said why on stderr, with the log's end
            process.kill()
            process.wait()
            raise RuntimeError("%s did not start (wait-ready exited %d); see %s"
                               % (name, waited.returncode, self.log_path))
        if int(waited.stdout) != self.port:
            process.kill()
            process.wait()
            raise RuntimeError("%s announced port %s in its ready line" % (name, waited.stdout.decode().strip()))
        with self.lock:
            self.process = process
            self.runs.append([])
            if self.kill_records and self.kill_records[-1][3] is None:
                self.kill_records[-1][3] = time.monotonic()

    def kill(self):
        with self.lock:
            process = self.process
            # The window opens before the signal: a request may fail from the signal on.
            began = time.monotonic()
            self.kill_records.append([began, None, None, None])
            self.process = None
        # This thread may lose the interpreter lock before the signal is sent: the process
        # still answers requests sent after `began` until it is dead, so it is dead for certain
        # only once reaped.
        process.send_signal(signal.SIGKILL)
        process.wait()
        with self.lock:
            self.kill_records[-1][1] = time.monotonic()

    def stop(self):
        """SIGTERM; the exit status (None if it had to be killed)."""
        with self.lock:
            process = self.process
            self.process = None
        if process is None:
            return None
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return None

    def sample(self):
        with self.lock:
            process, run = self.process, (self.runs[-1] if self.runs else None)
        if process is None or run is None:
            return
        try:
            with open("/proc/%d/status" % process.pid) as status:
                rss = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))
            fds = len(os.listdir("/proc/%d/fd" % process.pid))
        except (OSError, StopIteration):
            return
        run.append((time.monotonic(), rss, fds))

    def was_down(self, start, end):
        """Whether the node was down at some time in [start, end]."""
        with self.lock:
            windows = [(began, ready) for began, _, _, ready in self.kill_records]
        return any(a <= end and (b is None or b >= start) for a, b in windows)

    def died_between(self, start, end):
        """Whether the reply at `end` may come from a new process of this node, started after
        one that may have held the SET sent at `start` died: a kill began before `end`, its
        process was reaped after `start` (a SET sent at `start` may have been acknowledged by a
        process killed a moment later, so a kill that began before the send but was not yet
        done explains its loss too), and the node was up again by `end` (a reply before that
        came from the old process, which held the SET: its nil would be a real loss). "Up
        again" is the successor's spawn: it may answer before its ready line is seen."""
        with self.lock:
            return any(began <= end and reaped >= start and up is not None and up <= end
                       for began, reaped, up, _ in self.kill_records if reaped is not None)


# One command's outcome: `value` is the reply (a RespError for an error or no reply); `sent` and
# `replied` the times of its send and its reply; `since` the earlier of its send and the opening
# of the connection it went on (a connection opened before a kill may fail only when next used);
# `floor` what the router's snapshot function gave for its key just before the send.
Reply = collections.namedtuple("Reply", "index sent replied value since floor")


class Router:
    """One thread's connections: to the proxy, or to each node (cluster mode, by hash slot)."""

    def __init__(self, proxy_port, slot_ports):
        self.proxy_port, self.slot_ports = proxy_port, slot_ports
        self.connections = {}  # port -> (Connection, when it was opened)

    def port_of(self, key):
        return self.proxy_port if self.proxy_port else self.slot_ports[key_slot(key)]

    def run(self, commands, snapshot=None):
        """Sends [(key, args)], grouped by connection, one group after the other; returns a
        Reply per command. `snapshot(key)` is called for each command of a group just before
        that group is sent."""
        groups = {}
        for index, (key, args) in enumerate(commands):
            groups.setdefault(self.port_of(key), []).append((index, key, args))
        results = []
        for port, group in groups.items():
            floors = [snapshot(key) if snapshot else None for _, key, _ in group]
            sent = time.monotonic()
            conn, opened = self.connections.get(port, (None, sent))
            done = 0
            try:
                if conn is None:
                    conn = Connection(port, timeout=5.0)
                    self.connections[port] = (conn, opened)
                conn.send(b"".join(encode(args) for _, _, args in group))
                for (index, _, _), floor in zip(group, floors):
                    value = conn.reply()
                    results.append(Reply(index, sent, time.monotonic(), value, min(sent, opened), floor))
                    done += 1
            except (Closed, OSError):
                now = time.monotonic()
                for (index, _, _), floor in list(zip(group, floors))[done:]:
                    results.append(Reply(index, sent, now, RespError("no reply: connection failed"),
                                         min(sent, opened), floor))
                if conn is not None:
                    conn.close()
                self.connections.pop(port, None)
        return results

    def close(self):
        for conn, _ in self.connections.values():
            conn.close()


class Shared:
    """What writers, readers and the end check share (dict operations are atomic in CPython)."""

    def __init__(self):
        # key -> (seq, when that SET was sent): a kill after the send may have taken the SET's
        # result with it even when its +OK arrives after the kill (it was in flight).
        self.last_ok = {}
        self.unconfirmed = {}  # key -> seqs sent after it, answered with an error or not at all
        self.owner = {}        # key -> Node
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.acknowledged = 0
        self.errors_inside = 0
        self.errors_outside = []   # (key, text)
        self.error_texts = {}
        self.reads = 0
        self.stale = []            # (key, read seq, floor, why)
        self.nil_allowed = 0
        self.nil_missing = []      # (key, floor)
        self.failures = []

    def note_error(self, key, sent, replied, text):
        inside = self.owner[key].was_down(sent, replied)
        with self.lock:
            self.error_texts[text] = self.error_texts.get(text, 0) + 1
            if inside:
                self.errors_inside += 1
            else:
                self.errors_outside.append((key, text))


def writer(shared, router, keys, depth, seed):
    rng = random.Random(seed)
    seq = 0
    try:
        while not shared.stop.is_set():
            batch = []
            for _ in range(depth):
                seq += 1
                key = rng.choice(keys)
                batch.append((key, ("SET", key, "i%d" % seq), seq))
            for reply in router.run([(k, a) for k, a, _ in batch]):
                key, _, s = batch[reply.index]
                value = reply.value
                if value == b"OK":
                    shared.last_ok[key] = (s, reply.sent)
                    shared.unconfirmed.pop(key, None)
                    with shared.lock:
                        shared.acknowledged += 1
                else:
                    # An error does not prove the SET was not applied.
                    shared.unconfirmed.setdefault(key, set()).add(s)
                    shared.note_error(key, reply.since, reply.replied,
                                      str(value) if isinstance(value, RespError) else show(value))
    except Exception as error:  # a bug here must not pass for a clean run
        shared.failures.append("writer: %r" % error)
    finally:
        router.close()


def check_read(shared, key, reply, max_read, why):
    """One GET's reply against what was acknowledged before it was sent (`reply.floor`)."""
    value, floor, replied = reply.value, reply.floor, reply.replied
    if isinstance(value, RespError):
        shared.note_error(key, reply.since, replied, str(value))
        return
    with shared.lock:
        shared.reads += 1
    if value is None:
        seq, set_at = floor
        if seq < 0 or shared.owner[key].died_between(set_at, replied):
            with shared.lock:
                shared.nil_allowed += 1
        else:
            with shared.lock:
                shared.nil_missing.append((key, seq))
        return
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], bytes)):
        shared.failures.append("%s read %s, not [id, generation]" % (key, show(value)))
        return
    got = int(value[0][1:])
    if got < floor[0]:
        with shared.lock:
            shared.stale.append((key, got, floor[0], why))
    elif max_read is not None and got < max_read.get(key, -1):
        with shared.lock:
            shared.stale.append((key, got, max_read[key], "older than an id read before"))
    if max_read is not None:
        max_read[key] = max(got, max_read.get(key, -1))


def reader(shared, router, keys, depth, seed):
    rng = random.Random(seed)
    max_read = {}
    try:
        while not shared.stop.is_set():
            batch = [rng.choice(keys) for _ in range(depth)]
            for reply in router.run([(k, ("GET", k)) for k in batch],
                                    snapshot=lambda k: shared.last_ok.get(k, (-1, 0.0))):
                check_read(shared, batch[reply.index], reply, max_read,
                           "older than the last id acknowledged before the GET")
    except Exception as error:
        shared.failures.append("reader: %r" % error)
    finally:
        router.close()


def slope_per_minute(samples, field):
    """Least-squares slope of a run's samples after its first 5 s (when a node started again
    takes its keys back), per minute."""
    samples = [s for s in samples if samples and s[0] >= samples[0][0] + 5]
    if len(samples) < 4:
        return None
    t0 = samples[0][0]
    xs = [(s[0] - t0) / 60.0 for s in samples]
    ys = [s[field] for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return None if var == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var


def chaos(args):
    ports = [int(p) for p in args.ports.split(",")]
    if len(ports) < 2 or (args.proxy is None) == (args.cluster_config is None):
        print("chaos: give two or more --ports, and one of --proxy and --cluster-config", file=sys.stderr)
        return 3
    os.makedirs(args.log_dir, exist_ok=True)
    # SIGTERM (scripts/cluster's cleanup) ends the run through `finally`, which kills the nodes.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    nodes = []
    for index, port in enumerate(ports):
        argv = [args.taskid, "serve", "--port", str(port), "--loops", "1", "--work", "sleep:0"]
        if args.cluster_config:
            argv += ["--cluster-config", args.cluster_config, "--cluster-node", "node%d" % (index + 1)]
        nodes.append(Node(index, port, argv, os.path.join(args.log_dir, "chaos-node%d.log" % (index + 1))))
    try:
        for node in nodes:
            node.start()
        return run_chaos(args, nodes, ports)
    except RuntimeError as error:
        print("chaos: %s" % error, file=sys.stderr)
        return 3
    finally:
        for node in nodes:
            if node.process is not None:
                node.process.kill()
                node.process.wait()


def run_chaos(args, nodes, ports):
    keys = ["k:%d" % n for n in range(args.keys)]
    shared = Shared()
    slot_ports = None
    if args.cluster_config:
        # The slot map, as a cluster client learns it: CLUSTER SLOTS of any node.
        conn = Connection(ports[0])
        slots = conn.call("CLUSTER", "SLOTS")
        conn.close()
        if not isinstance(slots, list):
            print("chaos: CLUSTER SLOTS answered %s" % show(slots), file=sys.stderr)
            return 3
        slot_ports = [None] * 16384
        for entry in slots:
            for slot in range(entry[0], entry[1] + 1):
                slot_ports[slot] = entry[2][1]
        if None in slot_ports:
            print("chaos: the cluster does not serve every slot", file=sys.stderr)
            return 3

    def new_router():
        return Router(args.proxy, slot_ports)

    # Every key once (id i0), then where each one lives.
    router = new_router()
    for reply in router.run([(k, ("SET", k, "i0")) for k in keys]):
        if reply.value != b"OK":
            print("chaos: the first SET of %s failed: %s" % (keys[reply.index], show(reply.value)), file=sys.stderr)
            return 3
        shared.last_ok[keys[reply.index]] = (0, reply.sent)
    router.close()
    for node in nodes:
        conn = Connection(node.port)
        found = conn.pipeline([("EXISTS", k) for k in keys])
        conn.close()
        for k, f in zip(keys, found):
            if f == 1:
                if k in shared.owner:
                    print("chaos: FAIL: %s is held by two nodes" % k)
                    return 1
                shared.owner[k] = node
    unplaced = [k for k in keys if k not in shared.owner]
    if unplaced:
        print("chaos: %d keys are on no node, e.g. %s" % (len(unplaced), unplaced[0]), file=sys.stderr)
        return 3
    print("placement=" + ",".join("node%d:%d" % (n.index + 1, sum(1 for k in keys if shared.owner[k] is n))
                                  for n in nodes))

    threads = []
    for i in range(args.writers):
        threads.append(threading.Thread(target=writer, daemon=True,
                                        args=(shared, new_router(), keys[i::args.writers], args.depth, args.seed + i)))
    for i in range(args.readers):
        threads.append(threading.Thread(target=reader, daemon=True,
                                        args=(shared, new_router(), keys, args.depth, args.seed + 1000 + i)))

    def sampler():
        while not shared.stop.is_set():
            for node in nodes:
                node.sample()
            time.sleep(0.5)

    threads.append(threading.Thread(target=sampler, daemon=True))
    start = time.monotonic()
    for thread in threads:
        thread.start()

    # The kills: every --interval, the next node of a shuffled turn; back after --downtime.
    rng = random.Random(args.seed)
    turn = []
    next_kill = start + args.interval
    end = start + args.seconds
    while True:
        now = time.monotonic()
        if next_kill + args.downtime > end:
            break
        if now < next_kill:
            time.sleep(min(next_kill - now, 0.05))
            continue
        if not turn:
            turn = list(nodes)
            rng.shuffle(turn)
        victim = turn.pop()
        victim.kill()
        time.sleep(args.downtime)
        victim.start()
        next_kill += args.interval
    while time.monotonic() < end:
        time.sleep(0.05)
    shared.stop.set()
    for thread in threads:
        thread.join(timeout=30)
    load_seconds = time.monotonic() - start
    if shared.failures:
        print("chaos: the load generator failed: %s" % shared.failures[0], file=sys.stderr)
        return 3

    # The end: no run left on any node, then every key read once more.
    deadline = time.monotonic() + 10
    for node in nodes:
        while True:
            live = info_field(node.port, "live_generations")
            if live == 0:
                break
            if time.monotonic() > deadline:
                print("FAIL: node%d still had %s runs 10 s after the load stopped" % (node.index + 1, live))
                return 1
            time.sleep(0.02)
    router = new_router()
    results = router.run([(k, ("GET", k)) for k in keys])
    router.close()
    final = {"right": 0, "later_unconfirmed": 0, "lost_by_a_kill": 0, "stale": 0, "unexplained_newer": 0,
             "missing": 0, "unreadable": 0}
    for reply in results:
        key, value, replied = keys[reply.index], reply.value, reply.replied
        seq, set_at = shared.last_ok[key]
        if isinstance(value, RespError):
            final["unreadable"] += 1
        elif value is None:
            if shared.owner[key].died_between(set_at, replied):
                final["lost_by_a_kill"] += 1
            else:
                final["missing"] += 1
                shared.nil_missing.append((key, seq))
        elif not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], bytes)):
            shared.failures.append("%s read %s at the end, not [id, generation]" % (key, show(value)))
        elif int(value[0][1:]) == seq:
            final["right"] += 1
        elif int(value[0][1:]) in shared.unconfirmed.get(key, ()):
            final["later_unconfirmed"] += 1
        elif int(value[0][1:]) < seq:
            final["stale"] += 1
            shared.stale.append((key, int(value[0][1:]), seq, "at the end, older than the last acknowledged id"))
        else:
            # Newer than anything answered: a SET whose writer did not finish (it was stopped).
            final["unexplained_newer"] += 1
            shared.failures.append("%s read i%s at the end, newer than any SET answered (last acknowledged i%d)"
                                   % (key, value[0][1:].decode(), seq))

    statuses = [node.stop() for node in nodes]

    print("seconds=%.1f nodes=%d keys=%d writers=%d readers=%d depth=%d interval=%.1fs downtime=%.1fs"
          % (load_seconds, len(nodes), len(keys), args.writers, args.readers, args.depth, args.interval,
             args.downtime))
    print("kills=" + ",".join("node%d:%d" % (n.index + 1, len(n.kill_records)) for n in nodes))
    windows = [ready - began for n in nodes for began, _, _, ready in n.kill_records if ready is not None]
    if windows:
        print("down_ms min=%.0f median=%.0f max=%.0f (from SIGKILL to the restarted node's ready line)"
              % (min(windows) * 1000, sorted(windows)[len(windows) // 2] * 1000, max(windows) * 1000))
    print("acknowledged_sets=%d (%.0f/s) reads=%d (%.0f/s)" % (shared.acknowledged, shared.acknowledged / load_seconds,
                                                            shared.reads, shared.reads / load_seconds))
    print("errors_inside_failure_windows=%d errors_outside=%d" % (shared.errors_inside, len(shared.errors_outside)))
    if shared.error_texts:
        print("error_texts=" + "; ".join("%s x%d" % (t, n) for t, n in sorted(shared.error_texts.items())))
    print("stale_reads=%d nil_reads_after_a_kill=%d nil_reads_unexplained=%d"
          % (len(shared.stale), shared.nil_allowed, len(shared.nil_missing)))
    print("final: keys=%d " % len(keys) + " ".join("%s=%d" % item for item in final.items()))
    for node in nodes:
        longest = max(node.runs, key=len) if node.runs else []
        rss = slope_per_minute(longest, 1)
        fds = slope_per_minute(longest, 2)
        last = longest[-1] if longest else None
        first = longest[0] if longest else None
        print("node%d: runs=%d longest_run=%.0fs rss=%s MiB (slope %s MiB/min) fds=%s (slope %s/min) exit=%s"
              % (node.index + 1, len(node.runs), (longest[-1][0] - longest[0][0]) if len(longest) > 1 else 0,
                 "%.1f->%.1f" % (first[1] / 1048576, last[1] / 1048576) if last else "?",
                 "%+.3f" % (rss / 1048576) if rss is not None else "?",
                 "%d->%d" % (first[2], last[2]) if last else "?", "%+.2f" % fds if fds is not None else "?",
                 statuses[node.index]))

    failed = False
    if shared.stale:
        key, got, floor, why = shared.stale[0]
        print("FAIL: %d stale reads, e.g. %s read i%d, %s (i%d)" % (len(shared.stale), key, got, why, floor))
        failed = True
    if shared.nil_missing:
        key, seq = shared.nil_missing[0]
        print("FAIL: %d nil reads of keys whose node did not die after their last acknowledged SET was sent, "
              "e.g. %s (i%d)" % (len(shared.nil_missing), key, seq))
        failed = True
    if shared.errors_outside:
        key, text = shared.errors_outside[0]
        print("FAIL: %d errors outside a failure window of the key's node, e.g. %s: %s"
              % (len(shared.errors_outside), key, text))
        failed = True
    if final["unreadable"]:
        print("FAIL: %d keys could not be read at the end, with every node up" % final["unreadable"])
        failed = True
    if shared.failures:
        print("FAIL: %s" % shared.failures[0])
        failed = True
    short = [n.index + 1 for n in nodes if len(n.kill_records) < args.min_kills]
    if short:
        print("FAIL: nodes %s were killed fewer than %d times (a longer --seconds or a shorter --interval)"
              % (short, args.min_kills))
        failed = True
    if shared.acknowledged == 0 or shared.reads == 0:
        print("FAIL: no SET was acknowledged or no GET answered")
        failed = True
    if any(status != 0 for status in statuses):
        print("FAIL: a node did not exit 0 on SIGTERM (exit statuses %s)" % statuses)
        failed = True
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("command", nargs="+")
    c = sub.add_parser("chaos")
    c.add_argument("--taskid", required=True)
    c.add_argument("--ports", required=True)
    c.add_argument("--proxy", type=int)
    c.add_argument("--cluster-config")
    c.add_argument("--seconds", type=float, default=60)
    c.add_argument("--interval", type=float, default=10)
    c.add_argument("--downtime", type=float, default=1)
    c.add_argument("--keys", type=int, default=5000)
    c.add_argument("--writers", type=int, default=4)
    c.add_argument("--readers", type=int, default=2)
    c.add_argument("--depth", type=int, default=8)
    c.add_argument("--min-kills", type=int, default=2)
    c.add_argument("--log-dir", default=".")
    c.add_argument("--seed", type=int, default=1)
    f = sub.add_parser("free-ports")
    f.add_argument("count", type=int)
    args = parser.parse_args()
    if args.mode == "free-ports":
        print(" ".join(str(p) for p in free_ports(args.count)))
        return 0
    return probe(args) if args.mode == "probe" else chaos(args)


if __name__ == "__main__":
    sys.exit(main())
