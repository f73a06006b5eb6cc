#!/usr/bin/env python3
"""Chaos on the cluster on etcd, under load, with the checker: scripts/cluster --etcd --chaos.

    chaos_etcd.py TASKID [--seconds S] [--interval S] [--nodes N] [--lease S] [--keys N]
                          [--writers N] [--readers N] [--depth N] [--seed N]

Starts etcd and --nodes nodes (default 4) (`taskid serve --etcd`, --loops 1 --work sleep:0), a load that SETs
ids that only grow and GETs them through a cluster client that follows -MOVED (as redis-py's
RedisCluster does: a wrong node's -MOVED is followed, a dead node or -CLUSTERDOWN makes it read
CLUSTER SLOTS again and try the new owner), and, every --interval seconds once the cluster has
settled, the next fault of this cycle:
    SIGKILL a node (never restarted), a node joins, SIGSTOP a node past its lease then SIGCONT,
    etcd SIGKILLed and restarted (down for the lease plus 1 s, then 0.5 s, in turn),
    etcd SIGSTOPped past the lease (every node's lease expires) then SIGCONT,
    SIGTERM a node (it hands its slots over), a node joins.
The cycle repeats until --seconds have passed, and runs once at least.

What it watches besides the load:
  - etcd's history of the slot map (a watch on the prefix: every claim and release of a block,
    with its revision) and, every 20 ms, etcd's current revision: so each change has bounds on
    when etcd applied it (after the last poll sent that had not seen it, before the first poll
    answered that had);
  - every live node's CLUSTER INFO and CLUSTER SLOTS, every 100 ms: an observation is "settled"
    when each says cluster_state:ok, all give the same map, and every slot's owner is live.

Checked:
  1. no stale read: a GET never reads an id older than the last one acknowledged before it was
     sent, nor older than one this reader already read for the key;
  2. nil only after a move: a GET reads nil only if the key's block changed hands in etcd at a
     time that may lie between its last acknowledged SET's send and the GET's reply (a moved
     block starts empty). An etcd restart or a short pause moves nothing, so keeps every value;
  3. never two owners: every reply a node gives for a key (a value, nil or +OK; not an error)
     falls in a time when etcd may have recorded the node as the owner of the key's block. For
     a request sent to a node while it was stopped, the reply was made after the SIGCONT, so
     a node woken past its lease that answered for its old slots would fail this check;
  4. errors only inside a slot's move window: an error for a key whose time lies wholly between
     two settled observations with the same owner for its block, with no fault and no change of
     that block in etcd between them, fails the run;
  5. each block of a node SIGKILLed (never restarted) is served by another node within the
     lease plus 1 s of the kill, measured per block by the first reply from its new owner;
  6. at the end, with every node settled and no run left: each key reads its last acknowledged
     id (or a later one whose SET got an error), or nil if its block moved since that SET;
  7. every fault happened at least once, and the nodes left exit 0 on SIGTERM;
  8. an etcd stall past the lease, every node alive, moves no block (the settled maps before and
     after are the same) and loses no value: a sentinel key in every block, which the load never
     writes, set before the stall, reads its value right after it; and the stall expired leases
     (etcd deleted member keys), so that the nodes' coming back was exercised.
Prints key=value lines; exit 0 passed, 1 a check failed, 3 could not set up.
"""

import argparse
import base64
import bisect
import collections
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The shared RESP client, and the checks of the cluster on etcd, beside this file.
import cluster_load  # noqa: E402
import check_etcd as cluster_etcd  # noqa: E402
Connection, RespError, Closed = cluster_load.Connection, cluster_load.RespError, cluster_load.Closed
encode, key_slot, show = cluster_load.encode, cluster_load.key_slot, cluster_load.show
Failure, check = cluster_etcd.Failure, cluster_etcd.check

SLOTS, BLOCKS = 16384, 128
SLOTS_PER_BLOCK = SLOTS // BLOCKS
PREFIX = "/taskid/chaos/"
NODE_ARGUMENTS = ("--work", "sleep:0", "--loops", "1")
# A request unanswered for this long fails (a stopped node): the load goes on meanwhile, and
# sends a stopped node new requests throughout its pause, whose answers after the SIGCONT are
# judged from the SIGCONT on (check 3).
REQUEST_TIMEOUT_S = 2.0


def block_of(key):
    return key_slot(key) // SLOTS_PER_BLOCK


def sentinel_in_block(block, stall):
    """A key of `block` that the load never writes, for the etcd stall number `stall`."""
    index = 0
    while block_of("stall%d:%d:%d" % (stall, block, index)) != block:
        index += 1
    return "stall%d:%d:%d" % (stall, block, index)


def b64(text):
    return base64.b64encode(text.encode()).decode()


def etcd_post(url, path, body, timeout):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=timeout)


class History:
    """The slot map's history as etcd applied it: each change of `blocks/<n>` with its revision,
    and bounds on when each revision was applied, from polls of etcd's current revision."""

    def __init__(self, url):
        self.url = url
        self.lock = threading.Lock()
        self.changes = collections.defaultdict(list)  # block -> [(revision, owner id or None)]
        self.members_gone = {}  # node id -> when the deletion of its member key was received
        self.delivered = 0      # every change up to this revision has been received
        self.polls = []  # (revision, sent, received), revisions ascending (polls are sequential)
        self.stopping = threading.Event()
        self.failure = None
        end = PREFIX[:-1] + chr(ord(PREFIX[-1]) + 1)
        self.range = {"key": b64(PREFIX), "range_end": b64(end)}
        with etcd_post(url, "/v3/kv/range", self.range, 5) as response:
            reply = json.load(response)
        for kv in reply.get("kvs", []):
            self.apply(kv, int(kv["mod_revision"]), deleted=False)
        self.delivered = int(reply["header"]["revision"])
        self.threads = [threading.Thread(target=self.watch, daemon=True),
                        threading.Thread(target=self.poll, daemon=True)]
        for thread in self.threads:
            thread.start()

    def apply(self, kv, revision, deleted):
        key = base64.b64decode(kv["key"]).decode()
        if key.startswith(PREFIX + "blocks/"):
            owner = None if deleted else base64.b64decode(kv.get("value", "")).decode()
            self.changes[int(key[len(PREFIX + "blocks/"):])].append((revision, owner))
        elif key.startswith(PREFIX + "members/") and deleted:
            self.members_gone[key[len(PREFIX + "members/"):]] = time.monotonic()

    def watch(self):
        while not self.stopping.is_set():
            body = {"create_request": dict(self.range, start_revision=str(self.delivered + 1))}
            try:
                with etcd_post(self.url, "/v3/watch", body, 2) as response:
                    for line in response:
                        result = json.loads(line).get("result", {})
                        if result.get("canceled") or result.get("compact_revision"):
                            self.failure = "etcd cancelled the history's watch: %s" % result
                            return
                        events = result.get("events", [])
                        with self.lock:
                            for event in events:
                                revision = int(event["kv"]["mod_revision"])
                                self.apply(event["kv"], revision, event.get("type") == "DELETE")
                            if events:
                                self.delivered = int(events[-1]["kv"]["mod_revision"])
                        if self.stopping.is_set():
                            return
            except (OSError, ValueError):
                time.sleep(0.05)  # a quiet watch times out, etcd restarts: watch again from there

    def poll(self):
        body = {"key": b64(PREFIX + "poll")}
        while not self.stopping.is_set():
            sent = time.monotonic()
            try:
                with etcd_post(self.url, "/v3/kv/range", body, 1) as response:
                    revision = int(json.load(response)["header"]["revision"])
                received = time.monotonic()
                with self.lock:
                    self.polls.append((revision, sent, received))
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.02)

    def stop(self):
        self.stopping.set()

    def member_gone_since(self, name, since):
        """Whether etcd deleted `name`'s member key (its lease expired) after `since`."""
        with self.lock:
            return self.members_gone.get(name, float("-inf")) > since

    def known_until(self):
        """A time before which every change etcd applied is known here with its bounds."""
        if self.failure:
            raise Failure(self.failure)
        with self.lock:
            index = bisect.bisect_right(self.polls, self.delivered, key=lambda poll: poll[0]) - 1
            return self.polls[index][1] if index >= 0 else 0.0

    def applied_after(self, revision):
        """A time at or before which `revision` was certainly not yet applied. Under the lock."""
        index = bisect.bisect_left(self.polls, revision, key=lambda poll: poll[0]) - 1
        return self.polls[index][1] if index >= 0 else float("-inf")

    def applied_by(self, revision):
        """A time by which `revision` was certainly applied (inf while unknown). Under the lock."""
        index = bisect.bisect_left(self.polls, revision, key=lambda poll: poll[0])
        return self.polls[index][2] if index < len(self.polls) else float("inf")

    def owned(self, block, owner, start, end):
        """Whether etcd may have recorded `owner` as `block`'s owner at some time in [start, end]."""
        with self.lock:
            changes = list(self.changes.get(block, ()))
            for index, (revision, who) in enumerate(changes):
                if who != owner:
                    continue
                if self.applied_after(revision) > end:
                    return False  # this claim and every later one came after `end`
                ended = next((r for r, _ in changes[index + 1:]), None)
                if ended is None or self.applied_by(ended) >= start:
                    return True
            return False

    def changed(self, block, start, end):
        """Whether `block` may have changed hands in etcd at some time in [start, end]."""
        with self.lock:
            return any(self.applied_by(revision) >= start and self.applied_after(revision) <= end
                       for revision, _ in self.changes.get(block, ()))


class ClusterClient:
    """One thread's cluster client: a slot map from CLUSTER SLOTS; follows -MOVED; on a dead
    node or -CLUSTERDOWN reads the map again and tries the new owner, else reports the error."""

    MAX_TRIES = 6

    def __init__(self, seeds, heard=None):
        self.seeds = seeds  # a function: the addresses a client could know (not the killed ones)
        self.heard = heard  # called with (port, sent, value) for every answer, redirections too
        self.slot_ports = [None] * SLOTS
        self.connections = {}  # port -> Connection

    def refresh(self, avoid=None):
        ports = [p for p in set(self.slot_ports) | set(self.seeds()) if p is not None and p != avoid]
        random.shuffle(ports)
        for port in ports:
            try:
                conn = Connection(port, timeout=0.5)
                try:
                    reply = conn.call("CLUSTER", "SLOTS")
                finally:
                    conn.close()
            except (OSError, Closed):
                continue
            if isinstance(reply, list) and reply:
                slot_ports = [None] * SLOTS
                for entry in reply:
                    for slot in range(entry[0], entry[1] + 1):
                        slot_ports[slot] = entry[2][1]
                self.slot_ports = slot_ports
                return True
        return False

    def run(self, commands, snapshot=None):
        """Sends [(key, args)]; returns {index: Reply} with a Reply per command:
        `port` the node that gave the final answer, `sent` when that try was sent, `first` when
        the command was first sent, `replied`, `value`, and `floor` = snapshot(key) before the
        first send."""
        pending = [Try(index, key, args, snapshot(key) if snapshot else None)
                   for index, (key, args) in enumerate(commands)]
        results = {}
        for attempt in range(self.MAX_TRIES):
            if not pending:
                break
            last = attempt + 1 == self.MAX_TRIES
            groups = {}
            for item in pending:
                port = self.slot_ports[key_slot(item.key)]
                if port is None and self.refresh():
                    port = self.slot_ports[key_slot(item.key)]
                groups.setdefault(port, []).append(item)
            pending = []
            for port, group in groups.items():
                if port is None:
                    now = time.monotonic()
                    for item in group:
                        results[item.index] = item.reply(None, now, now, RespError("no node for the slot"))
                    continue
                sent = time.monotonic()
                conn = self.connections.get(port)
                answered = 0
                stale_map = False
                try:
                    if conn is None:
                        conn = self.connections[port] = Connection(port, timeout=REQUEST_TIMEOUT_S)
                    conn.send(b"".join(encode(item.args) for item in group))
                    for item in group:
                        value = conn.reply()
                        answered += 1
                        replied = time.monotonic()
                        if self.heard:
                            self.heard(port, sent, value)
                        item.first = item.first or sent
                        text = str(value) if isinstance(value, RespError) else ""
                        if text.startswith("MOVED ") and not last:
                            slot, address = text.split()[1:3]
                            self.slot_ports[int(slot)] = int(address.rsplit(":", 1)[1])
                            pending.append(item)
                        elif text.startswith("CLUSTERDOWN") and not last:
                            stale_map = True
                            item.failed = (port, replied, value)
                            pending.append(item)
                        else:
                            results[item.index] = item.reply(port, sent, replied, value)
                except (Closed, OSError):
                    now = time.monotonic()
                    for item in group[answered:]:
                        item.first = item.first or sent
                        item.failed = (port, now, RespError("no reply: connection failed"))
                        pending.append(item)
                    if conn is not None:
                        conn.close()
                    self.connections.pop(port, None)
                    stale_map = True
                if stale_map:
                    self.refresh(avoid=port)
            # A failed try is tried again only where the map now names another node.
            again = []
            for item in pending:
                if item.failed and self.slot_ports[key_slot(item.key)] in (None, item.failed[0]):
                    port, replied, value = item.failed
                    results[item.index] = item.reply(port, replied, replied, value)
                else:
                    item.failed = None
                    again.append(item)
            pending = again
        now = time.monotonic()
        for item in pending:
            results[item.index] = item.reply(None, now, now, RespError("too many redirections"))
        return results

    def close(self):
        for conn in self.connections.values():
            conn.close()
        self.connections = {}


Reply = collections.namedtuple("Reply", "port sent first replied value floor")


class Try:
    """A command on its way: where it stands between tries, and its last failure (port,
    replied, value) if that try failed in a way that may be tried elsewhere."""

    __slots__ = ("index", "key", "args", "floor", "first", "failed")

    def __init__(self, index, key, args, floor):
        self.index, self.key, self.args, self.floor = index, key, args, floor
        self.first = None
        self.failed = None

    def reply(self, port, sent, replied, value):
        return Reply(port, sent, self.first or sent, replied, value, self.floor)


class Shared:
    """What the load, the judge, the observer and the driver share."""

    def __init__(self):
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.last_ok = {}        # key -> (seq, when that SET was first sent)
        self.unconfirmed = {}    # key -> seqs sent after it, answered with an error
        self.nodes = {}          # port -> Node, every node ever started
        self.live = set()        # ports of nodes up and not stopped
        self.exited = set()      # ports of nodes killed or terminated
        self.stopped_at = {}     # port -> [(stopped from, continued at)]
        self.judging = collections.deque()  # (kind, ...) waiting for etcd's history
        self.acknowledged = 0
        self.reads = 0
        self.errors = []         # (key, first sent, replied, text)
        self.error_texts = collections.Counter()
        self.stale = []          # (key, read, floor, why)
        self.nil_after_move = 0
        self.nil_unexplained = []
        self.served_judged = 0
        self.violations = []     # (node, key, start, end)
        self.woken_answers = collections.Counter()  # requests sent during a pause, answered after
        # block -> (fault kind, fault time, the port whose answers do not count: the node that
        # lost it, if it could still answer after the fault time (not a stopped one))
        self.unavailable = {}
        self.never_served = 0
        self.unavailability = collections.defaultdict(list)  # fault kind -> [seconds]
        self.failures = []

    def lose(self, block, kind, when, port):
        """A fault took `block` from its node at `when`: its unavailability is measured until
        the earliest reply of another node to a request sent after it (check 5)."""
        with self.lock:
            self.settle(block)
            self.unavailable[block] = [kind, when, port, float("inf")]

    def settle(self, block):
        """Records the measured unavailability of `block`'s last loss. Under the lock."""
        lost = self.unavailable.pop(block, None)
        if lost and lost[3] < float("inf"):
            self.unavailability[lost[0]].append(lost[3])
        elif lost:
            self.never_served += 1

    def seeds(self):
        with self.lock:
            return [port for port in self.nodes if port not in self.exited]

    def served(self, port, key, sent, replied):
        self.judging.append(("served", port, key, sent, replied))

    def heard(self, port, sent, value):
        """Counts the answers of a node woken from a pause to the requests sent while it was stopped."""
        windows = self.stopped_at.get(port)
        if windows and any(stopped <= sent <= continued for stopped, continued in windows):
            with self.lock:
                self.woken_answers[str(value).split(" ")[0] if isinstance(value, RespError) else "served"] += 1

    def note_error(self, key, reply):
        text = str(reply.value)
        with self.lock:
            self.errors.append((key, reply.first, reply.replied, text))
            self.error_texts[text.split(" ")[0] if text.startswith(("MOVED", "CLUSTERDOWN")) else text] += 1


def writer(shared, client, keys, depth, seed):
    rng = random.Random(seed)
    seq = 0
    try:
        while not shared.stop.is_set():
            batch = []
            for key in rng.sample(keys, depth):  # one SET of a key per batch: its ids stay in order
                seq += 1
                batch.append((key, ("SET", key, "i%d" % seq), seq))
            for index, reply in client.run([(k, a) for k, a, _ in batch]).items():
                key, _, s = batch[index]
                if reply.value == b"OK":
                    shared.last_ok[key] = (s, reply.first)
                    shared.unconfirmed.pop(key, None)
                    shared.served(reply.port, key, reply.sent, reply.replied)
                    with shared.lock:
                        shared.acknowledged += 1
                else:
                    shared.unconfirmed.setdefault(key, set()).add(s)
                    shared.note_error(key, reply)
    except Exception as error:  # a bug here must not pass for a clean run
        shared.failures.append("writer: %r" % error)
    finally:
        client.close()


def reader(shared, client, keys, depth, seed):
    rng = random.Random(seed)
    max_read = {}
    try:
        while not shared.stop.is_set():
            batch = rng.sample(keys, depth)
            replies = client.run([(k, ("GET", k)) for k in batch],
                                 snapshot=lambda k: shared.last_ok.get(k, (-1, 0.0)))
            for index, reply in replies.items():
                key, value = batch[index], reply.value
                if isinstance(value, RespError):
                    shared.note_error(key, reply)
                    continue
                with shared.lock:
                    shared.reads += 1
                shared.served(reply.port, key, reply.sent, reply.replied)
                if value is None:
                    shared.judging.append(("nil", key, reply.port, reply.floor, reply.replied))
                    continue
                if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], bytes)):
                    shared.failures.append("%s read %s, not [id, generation]" % (key, show(value)))
                    continue
                got = int(value[0][1:])
                if got < reply.floor[0]:
                    with shared.lock:
                        shared.stale.append((key, got, reply.floor[0],
                                             "older than the last id acknowledged before the GET"))
                elif got < max_read.get(key, -1):
                    with shared.lock:
                        shared.stale.append((key, got, max_read[key], "older than an id read before"))
                max_read[key] = max(got, max_read.get(key, -1))
    except Exception as error:
        shared.failures.append("reader: %r" % error)
    finally:
        client.close()


def judge(shared, history, final=False):
    """Judges what waits for etcd's history (checks 2, 3 and 5), up to what the history knows."""
    known = history.known_until()
    while shared.judging:
        item = shared.judging[0]
        if item[-1] >= known:
            if not final:
                return
            raise Failure("etcd's history never caught up with the last replies")
        shared.judging.popleft()
        if item[0] == "nil":
            _, key, port, (seq, set_sent), replied = item
            if seq < 0 or history.changed(block_of(key), set_sent, replied):
                shared.nil_after_move += 1
            else:
                shared.nil_unexplained.append((key, seq, shared.nodes[port].name, set_sent, replied))
            continue
        _, port, key, sent, replied = item
        node = shared.nodes[port]
        block = block_of(key)
        start = sent
        for stopped, continued in shared.stopped_at.get(port, ()):
            if stopped <= sent <= continued:
                start = continued  # a stopped process answers nothing before its SIGCONT
        shared.served_judged += 1
        if not history.owned(block, node.name, start, replied):
            shared.violations.append((node.name, key, start, replied))
        with shared.lock:
            lost = shared.unavailable.get(block)
            if lost and sent >= lost[1] and port != lost[2]:
                lost[3] = min(lost[3], replied - lost[1])


def judge_loop(shared, history):
    try:
        while not shared.stop.is_set():
            judge(shared, history)
            time.sleep(0.02)
    except Exception as error:
        shared.failures.append("judge: %r" % error)


Observation = collections.namedtuple("Observation", "start end settled owners")


class Observer:
    """Every live node's CLUSTER INFO and CLUSTER SLOTS, every 100 ms (check 4)."""

    def __init__(self, shared):
        self.shared = shared
        self.observations = []
        self.connections = {}
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def ask(self, port, *args):
        conn = self.connections.get(port)
        try:
            if conn is None:
                conn = self.connections[port] = Connection(port, timeout=0.5)
            return conn.call(*args)
        except (OSError, Closed):
            self.connections.pop(port, None)
            if conn is not None:
                conn.close()
            return None

    def observe(self):
        start = time.monotonic()
        with self.shared.lock:
            live = sorted(self.shared.live)
        maps = []
        settled = bool(live)
        for port in live:
            info = self.ask(port, "CLUSTER", "INFO")
            slots = self.ask(port, "CLUSTER", "SLOTS")
            if not isinstance(info, bytes) or b"cluster_state:ok" not in info or not isinstance(slots, list):
                settled = False
                continue
            owners = [None] * BLOCKS
            for entry in slots:
                for block in range(entry[0] // SLOTS_PER_BLOCK, entry[1] // SLOTS_PER_BLOCK + 1):
                    owners[block] = entry[2][1]
            maps.append(tuple(owners))
        settled = settled and len(set(maps)) == 1 and all(owner in live for owner in maps[0])
        return Observation(start, time.monotonic(), settled, maps[0] if settled else None)

    def loop(self):
        while not self.shared.stop.is_set():
            observation = self.observe()
            self.observations.append(observation)
            time.sleep(0.1)

    def wait_settled(self, limit):
        """The first settled observation begun after now."""
        asked = time.monotonic()
        deadline = asked + limit
        seen = len(self.observations)
        while time.monotonic() < deadline:
            for observation in self.observations[seen:]:
                if observation.start > asked and observation.settled:
                    return observation
            seen = max(seen, len(self.observations) - 1)
            time.sleep(0.02)
        raise Failure("the cluster did not settle within %.0f s (last seen: %s)"
                      % (limit, self.observations[-1] if self.observations else "nothing"))

    def stop(self):
        self.thread.join(timeout=5)
        for conn in self.connections.values():
            conn.close()


def errors_outside(errors, observations, faults, history):
    """Errors whose time lies wholly between settled observations that agree on the key's
    block, with no fault and no change of that block in etcd among them (check 4)."""
    starts = [o.start for o in observations]
    ends = [o.end for o in observations]
    outside = []
    for key, since, replied, text in errors:
        block = block_of(key)
        before = bisect.bisect_right(ends, since) - 1  # ends by `since`
        after = bisect.bisect_left(starts, replied)                             # starts after it
        if before < 0 or after >= len(observations):
            continue
        run = observations[before:after + 1]
        if not all(o.settled for o in run) or len({o.owners[block] for o in run}) != 1:
            continue
        first, last = run[0].start, run[-1].end
        if any(a <= last and b >= first for a, b, _ in faults):
            continue
        if history.changed(block, first, last):
            continue
        outside.append((key, text, since, replied))
    return outside


class Chaos:
    def __init__(self, args, directory):
        self.args = args
        self.directory = directory
        self.shared = Shared()
        self.etcd = cluster_etcd.Etcd(directory)
        self.history = None
        self.observer = None
        self.next_name = 1
        self.faults = []  # (from, to, kind)
        self.etcd_long = True
        self.etcd_figures = []  # (downtime, settled after the restart)
        self.stall_figures = []  # (stalled for, blocks moved, keys that read nil after it)
        self.keys = []
        self.pauses = []

    def start_node(self):
        name = "node%d" % self.next_name
        self.next_name += 1
        # Known by its port before it starts: its ready line comes once it serves, and by then
        # the load's clients may already have been sent to it.
        (port,) = cluster_etcd.free_ports(1)
        with self.shared.lock:
            self.shared.nodes[port] = types.SimpleNamespace(name=name, port=port)
        node = cluster_etcd.Node(self.args.taskid, name, self.etcd, self.args.lease, self.directory, port=port,
                                 work=NODE_ARGUMENTS, extra=["--etcd", self.etcd.url, "--etcd-lease-seconds",
                                                             str(self.args.lease), "--etcd-cluster", "chaos"])
        with self.shared.lock:
            self.shared.nodes[node.port] = node
            self.shared.live.add(node.port)
        return node

    def live_nodes(self):
        with self.shared.lock:
            return [self.shared.nodes[port] for port in sorted(self.shared.live)]

    def owned_blocks(self, observation, port):
        return [block for block, owner in enumerate(observation.owners) if owner == port]

    def fault(self, kind, rng):
        settled = self.observer.wait_settled(30)
        shared = self.shared
        began = time.monotonic()
        if kind in ("kill", "pause", "term"):
            victim = rng.choice(self.live_nodes())
            with shared.lock:
                shared.live.discard(victim.port)
            if kind != "pause":  # a pause's blocks: from when the process is seen stopped
                for block in self.owned_blocks(settled, victim.port):
                    shared.lose(block, kind, began, victim.port)
        if kind == "kill":
            with shared.lock:
                shared.exited.add(victim.port)
            victim.process.kill()
            victim.process.wait()
        elif kind == "term":
            with shared.lock:
                shared.exited.add(victim.port)
            victim.process.send_signal(signal.SIGTERM)
            status = victim.process.wait(timeout=60)
            check(status == 0, "%s exited %s on SIGTERM" % (victim.name, status))
        elif kind == "pause":
            victim.process.send_signal(signal.SIGSTOP)
            cluster_etcd.wait_for("%s stopped" % victim.name, lambda: process_state(victim.process.pid),
                                  lambda state: state == "T")
            stopped = time.monotonic()
            for block in self.owned_blocks(settled, victim.port):
                shared.lose(block, kind, stopped, None)
            # Past the lease: etcd has deleted the node's blocks before it runs again.
            time.sleep(self.args.lease + 1)
            cluster_etcd.wait_for("%s's lease expired in etcd" % victim.name,
                                  lambda: self.history.member_gone_since(victim.name, stopped), lambda gone: gone)
            continued = time.monotonic()
            with shared.lock:
                shared.stopped_at.setdefault(victim.port, []).append((stopped, continued))
            victim.process.send_signal(signal.SIGCONT)
            with shared.lock:
                shared.live.add(victim.port)
            self.pauses.append(continued - stopped)
        elif kind == "join":
            self.start_node()
        elif kind == "stall":
            # A key in every block that the load never writes, set and committed before the stall.
            sentinels = [sentinel_in_block(block, len(self.stall_figures)) for block in range(BLOCKS)]
            client = ClusterClient(shared.seeds)
            check(client.refresh(), "no node answered CLUSTER SLOTS before the etcd stall")
            for index, reply in client.run([(key, ("SET", key, "kept")) for key in sentinels]).items():
                check(reply.value == b"OK", "SET %s before the stall: %s" % (sentinels[index], show(reply.value)))
            cluster_etcd.wait_for("the sentinels' runs committed",
                                  lambda: [r.value for r in client.run([(k, ("GET", k)) for k in sentinels]).values()],
                                  lambda values: all(isinstance(v, list) for v in values))
            names = [node.name for node in self.live_nodes()]
            stopped = time.monotonic()
            # Past the lease: when etcd runs again, every node's lease has expired in it.
            self.etcd.process.send_signal(signal.SIGSTOP)
            time.sleep(self.args.lease + 2)
            self.etcd.process.send_signal(signal.SIGCONT)
            after = self.observer.wait_settled(30)
            expired = [name for name in names if self.history.member_gone_since(name, stopped)]
            moved = [block for block in range(BLOCKS) if settled.owners[block] != after.owners[block]]
            results = client.run([(key, ("GET", key)) for key in sentinels])
            client.close()
            lost = [sentinels[index] for index, reply in results.items() if not isinstance(reply.value, list)]
            self.stall_figures.append((self.args.lease + 2, len(expired), len(names), len(moved), len(lost)))
        elif kind == "etcd":
            downtime = self.args.lease + 1 if self.etcd_long else 0.5
            self.etcd_long = not self.etcd_long
            self.etcd.kill()
            time.sleep(downtime)
            self.etcd.start()
        self.faults.append((began, time.monotonic(), kind))
        if kind == "etcd":
            back = time.monotonic()
            self.etcd_figures.append((back - began, self.observer.wait_settled(30).end - back))

    def run(self):
        args, shared = self.args, self.shared
        self.history = History(self.etcd.url)
        for _ in range(args.nodes):
            self.start_node()
        keys = self.keys = ["k:%d" % n for n in range(args.keys)]
        self.observer = Observer(shared)
        self.observer.wait_settled(30)
        client = ClusterClient(shared.seeds)
        check(client.refresh(), "no node answered CLUSTER SLOTS")
        for index, reply in client.run([(k, ("SET", k, "i0")) for k in keys]).items():
            check(reply.value == b"OK", "the first SET of %s: %s" % (keys[index], show(reply.value)))
            shared.last_ok[keys[index]] = (0, reply.first)
        client.close()
        threads = [threading.Thread(target=writer, daemon=True,
                                    args=(shared, ClusterClient(shared.seeds, shared.heard), keys[i::args.writers], args.depth,
                                          args.seed + i)) for i in range(args.writers)]
        threads += [threading.Thread(target=reader, daemon=True,
                                     args=(shared, ClusterClient(shared.seeds, shared.heard), keys, args.depth,
                                           args.seed + 1000 + i)) for i in range(args.readers)]
        threads.append(threading.Thread(target=judge_loop, daemon=True, args=(shared, self.history)))
        start = self.started = time.monotonic()
        print("started at %s (monotonic %.3f)" % (time.strftime("%H:%M:%S"), start), flush=True)
        for thread in threads:
            thread.start()
        rng = random.Random(args.seed)
        cycle = ["kill", "join", "pause", "etcd", "stall", "term", "join"]
        done = 0
        while done < len(cycle) or time.monotonic() - start < args.seconds:
            time.sleep(args.interval)
            self.fault(cycle[done % len(cycle)], rng)
            done += 1
            check(not shared.failures, "the load generator failed: %s" % (shared.failures or [""])[0])
        self.observer.wait_settled(30)
        time.sleep(args.interval)
        shared.stop.set()
        for thread in threads:
            thread.join(timeout=30)
            check(not thread.is_alive(), "a load or judge thread did not stop within 30 s")
        self.observer.stop()
        seconds = time.monotonic() - start
        return self.finish(keys, seconds, done)

    def finish(self, keys, seconds, done):
        args, shared, history = self.args, self.shared, self.history
        check(not shared.failures, "the load generator failed: %s" % (shared.failures or [""])[0])
        live = self.live_nodes()
        for node in live:
            cluster_etcd.wait_for("%s's runs finished" % node.name,
                                  lambda: cluster_load.info_field(node.port, "live_generations"), lambda n: n == 0,
                                  limit=10)
        client = ClusterClient(shared.seeds)
        check(client.refresh(), "no node answered CLUSTER SLOTS at the end")
        results = client.run([(k, ("GET", k)) for k in keys])
        client.close()
        cluster_etcd.wait_for("etcd's history caught up", history.known_until,
                              lambda known: known > max(r.replied for r in results.values()))
        judge(shared, history, final=True)
        with shared.lock:
            for block in list(shared.unavailable):
                shared.settle(block)
        final = collections.Counter()
        for index, reply in results.items():
            key, value = keys[index], reply.value
            seq, set_sent = shared.last_ok[key]
            if isinstance(value, RespError):
                final["unreadable"] += 1
            elif value is None:
                final["nil_after_a_move" if history.changed(block_of(key), set_sent, reply.replied) else "missing"] += 1
            elif int(value[0][1:]) == seq:
                final["right"] += 1
            elif int(value[0][1:]) in shared.unconfirmed.get(key, ()):
                final["later_unconfirmed"] += 1
            elif int(value[0][1:]) < seq:
                final["stale"] += 1
            else:
                final["newer_than_any_answered"] += 1
        outside = errors_outside(shared.errors, self.observer.observations, self.faults, history)
        statuses = []
        for node in live:
            node.process.send_signal(signal.SIGTERM)
            statuses.append((node.name, node.process.wait(timeout=60)))
        history.stop()

        kinds = collections.Counter(kind for _, _, kind in self.faults)
        print("seconds=%.1f faults=%d (%s) lease=%ds keys=%d writers=%d readers=%d depth=%d"
              % (seconds, done, ", ".join("%s x%d" % item for item in sorted(kinds.items())), args.lease,
                 len(keys), args.writers, args.readers, args.depth))
        print("acknowledged_sets=%d (%.0f/s) reads=%d (%.0f/s)"
              % (shared.acknowledged, shared.acknowledged / seconds, shared.reads, shared.reads / seconds))
        print("errors=%d errors_outside_a_move_window=%d" % (len(shared.errors), len(outside)))
        if shared.error_texts:
            print("error_texts=" + "; ".join("%s x%d" % item for item in sorted(shared.error_texts.items())))
        print("stale_reads=%d nil_reads_after_a_move=%d nil_reads_unexplained=%d"
              % (len(shared.stale), shared.nil_after_move, len(shared.nil_unexplained)))
        print("replies_judged_against_etcd=%d served_without_ownership=%d" % (shared.served_judged,
                                                                               len(shared.violations)))
        print("woken_node_answers (to requests sent while it was stopped): "
              + (", ".join("%s x%d" % item for item in sorted(shared.woken_answers.items())) or "none"))
        for kind in ("kill", "pause", "term"):
            figures = sorted(shared.unavailability.get(kind, []))
            if figures:
                print("unavailable_after_%s: %d blocks, %.2f / %.2f / %.2f s (min / median / max, per block, "
                      "from the signal to the first reply of its new owner)"
                      % (kind, len(figures), figures[0], figures[len(figures) // 2], figures[-1]))
        for downtime, settled in self.etcd_figures:
            print("etcd_restart: down %.2f s, every node serving its map again %.2f s after etcd was back"
                  % (downtime, settled))
        for stalled, expired, nodes, moved, lost in self.stall_figures:
            print("etcd_stall: stopped %.1f s (past the lease), every node alive, %d of %d leases expired: %d blocks "
                  "moved, %d of %d sentinel keys (one a block, set before it) lost" % (stalled, expired, nodes, moved,
                                                                                     lost, BLOCKS))
        print("final: keys=%d " % len(keys) + " ".join("%s=%d" % item for item in sorted(final.items())))
        print("exit_statuses=" + ",".join("%s:%s" % item for item in statuses))

        failed = []
        if shared.stale:
            key, got, floor, why = shared.stale[0]
            failed.append("%d stale reads, e.g. %s read i%d, %s (i%d)" % (len(shared.stale), key, got, why, floor))
        if shared.nil_unexplained:
            failed.append("%d nil reads of keys whose block did not move after their last acknowledged SET, e.g. "
                          "%s (i%d)" % ((len(shared.nil_unexplained),) + shared.nil_unexplained[0][:2]))
            for key, seq, name, set_sent, replied in shared.nil_unexplained[:5]:
                fault = max((f for f in self.faults if f[0] <= replied), default=None)
                with history.lock:
                    changes = [(revision, owner, round(history.applied_after(revision) - self.started, 3))
                               for revision, owner in history.changes.get(block_of(key), [])][-4:]
                print("  nil: %s (block %d) on %s: i%d sent at %+.3f s, the GET answered at %+.3f s; last fault "
                      "before: %s at %+.3f s; the block's changes: %s"
                      % (key, block_of(key), name, seq, set_sent - self.started, replied - self.started,
                         fault[2] if fault else "none", (fault[0] - self.started) if fault else 0, changes))
        if shared.violations:
            failed.append("%d replies from a node that did not own the block in etcd, e.g. %s for %s in "
                          "[%.3f, %.3f]" % ((len(shared.violations),) + shared.violations[0]))
        if outside:
            # Each with its times (monotonic, as the start line gives it): what the node logs say then.
            examples = "; ".join("%s at %.3f-%.3f: %s" % (key, since, replied, text)
                                 for key, text, since, replied in outside[:5])
            failed.append("%d errors outside a move window, e.g. %s" % (len(outside), examples))
        worst = max(shared.unavailability.get("kill", [0]))
        if worst > args.lease + 1:
            failed.append("a block of a killed node was unavailable %.2f s (lease %d s + 1 s)" % (worst, args.lease))
        if shared.never_served:
            failed.append("%d blocks of a killed or paused node never served again" % shared.never_served)
        for what in ("unreadable", "missing", "stale", "newer_than_any_answered"):
            if final[what]:
                failed.append("%d keys %s at the end" % (final[what], what.replace("_", " ")))
        for stalled, expired, nodes, moved, lost in self.stall_figures:
            if moved or lost:
                failed.append("an etcd stall of %.1f s, every node alive, moved %d blocks and lost %d values"
                              % (stalled, moved, lost))
            if expired == 0:
                failed.append("an etcd stall of %.1f s expired no lease: sticky ownership was not exercised" % stalled)
        if set(kinds) != {"kill", "join", "pause", "etcd", "stall", "term"}:
            failed.append("not every fault happened: %s" % dict(kinds))
        if shared.acknowledged == 0 or shared.reads == 0:
            failed.append("no SET was acknowledged or no GET answered")
        if any(status != 0 for _, status in statuses):
            failed.append("a node did not exit 0 on SIGTERM: %s" % statuses)
        for reason in failed:
            print("FAIL: " + reason)
        return 1 if failed else 0


def process_state(pid):
    with open("/proc/%d/stat" % pid) as file:
        return file.read().rsplit(")", 1)[1].split()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("taskid")
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--interval", type=float, default=3)
    parser.add_argument("--lease", type=int, default=2)
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.nodes < 3:
        print("cluster-etcd-chaos: --nodes must be 3 or more", file=sys.stderr)
        return 2
    if shutil.which("etcd") is None:
        print("cluster-etcd-chaos: etcd is missing (apt-get install etcd-server)", file=sys.stderr)
        return 3
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    directory = tempfile.mkdtemp(prefix="taskid-etcd-chaos-")
    chaos = None
    try:
        chaos = Chaos(args, directory)
        status = chaos.run()
        if status == 0 and os.environ.get("KEEP_LOGS") != "1":
            shutil.rmtree(directory, ignore_errors=True)
        else:
            print("cluster-etcd-chaos: logs in %s" % directory)
        return status
    except Failure as failure:
        print("cluster-etcd-chaos: FAIL: %s (logs kept in %s)" % (failure, directory), file=sys.stderr)
        return 1
    finally:
        if chaos and chaos.history:
            chaos.history.stop()
        for process in cluster_etcd.STARTED:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()
        if chaos:
            chaos.etcd.kill()


if __name__ == "__main__":
    sys.exit(main())
