#!/usr/bin/env python3
"""The load generator and checks of scripts/cluster: a small RESP client on sockets (stdlib only).

  cluster-load.py probe --port P COMMAND...
      sends each COMMAND (one string, split on spaces) on a new connection and prints one line:
      COMMAND -> the reply, or "connection closed" when the server (the proxy) hangs up.

  cluster-load.py failover --proxy P --nodes P1,P2,... --victim-pid PID --victim-port P
                           [--keys N] [--connections N] [--depth N] [--before S] [--after S]
                           [--recover-ms MS]
      SETs every key k:<n> once through the proxy, finds which node holds each key (EXISTS on
      every node directly), then runs --connections connections through the proxy, each owning
      its share of the keys and SETting them with ids i<seq> that only grow (pipelined --depth
      deep). After --before seconds it kills the victim with SIGKILL and goes on for --after
      seconds with half of the keys (the other half is never SET again), waits until the
      surviving nodes have no run left (INFO live_generations), GETs every key through the
      proxy and checks:
        1. requests fail for a bounded window after the kill and then succeed again, the keys
           of the dead node included (they now hash to a survivor);
        2. every key reads the last id acknowledged with +OK, or a later one whose SET was
           answered with an error or not at all (0 stale);
        3. the keys lost are exactly the dead node's keys that were not SET again after the
           kill: they read nil, and no other key does.
      Prints key=value lines; exit 0 passed, 1 a check failed, 3 could not set up.
"""

import argparse
import os
import random
import signal
import socket
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


OK, ERROR, LOST = 0, 1, 2


class Loader(threading.Thread):
    """One connection through the proxy, SETting its own keys with growing ids."""

    def __init__(self, index, port, keys, hot, killed, depth, stop_at):
        super().__init__(daemon=True)
        self.index, self.port, self.keys, self.hot, self.depth, self.stop_at = index, port, keys, hot, depth, stop_at
        self.killed = killed
        self.seq = 0
        self.last_ok = {}          # key -> seq of the last SET acknowledged with +OK
        self.unconfirmed = {}      # key -> seqs sent after that, answered with an error or not at all
        self.events = []           # (reply time, send time, key, OK|ERROR|LOST)
        self.errors = {}           # error text -> count
        self.reconnects = 0
        self.failure = None

    def run(self):
        rng = random.Random(self.index)
        conn = None
        try:
            while time.monotonic() < self.stop_at:
                if conn is None:
                    try:
                        conn = Connection(self.port)
                    except OSError:
                        time.sleep(0.01)
                        continue
                batch = []
                pool = self.hot if self.killed.is_set() else self.keys
                for _ in range(self.depth):
                    self.seq += 1
                    batch.append((rng.choice(pool), self.seq))
                sent = time.monotonic()
                done = 0
                try:
                    conn.send(b"".join(encode(("SET", "k:%d" % k, "i%d" % s)) for k, s in batch))
                    for key, seq in batch:
                        value = conn.reply()
                        now = time.monotonic()
                        done += 1
                        if value == b"OK":
                            self.last_ok[key] = seq
                            self.unconfirmed.pop(key, None)
                            self.events.append((now, sent, key, OK))
                        else:  # an error (a timeout, say) does not prove the SET was not applied
                            text = str(value)
                            self.errors[text] = self.errors.get(text, 0) + 1
                            self.unconfirmed.setdefault(key, set()).add(seq)
                            self.events.append((now, sent, key, ERROR))
                except (Closed, OSError):
                    now = time.monotonic()
                    for key, seq in batch[done:]:
                        self.unconfirmed.setdefault(key, set()).add(seq)
                        self.events.append((now, sent, key, LOST))
                    conn.close()
                    conn = None
                    self.reconnects += 1
        except Exception as error:  # a bug here must not pass for a clean run
            self.failure = repr(error)
        finally:
            if conn is not None:
                conn.close()


def info_field(port, name):
    conn = Connection(port)
    try:
        text = conn.call("INFO")
    finally:
        conn.close()
    for line in text.decode().split("\r\n"):
        if line.startswith(name + ":"):
            return int(line.split(":", 1)[1])
    raise ValueError("INFO has no %s" % name)


def failover(args):
    nodes = [int(p) for p in args.nodes.split(",")]
    survivors = [p for p in nodes if p != args.victim_port]
    if len(survivors) != len(nodes) - 1:
        print("failover: the victim's port is not one of --nodes", file=sys.stderr)
        return 3
    keys = list(range(args.keys))

    # Every key once, through the proxy (id i0), then where each one landed.
    try:
        conn = Connection(args.proxy)
        replies = conn.pipeline([("SET", "k:%d" % k, "i0") for k in keys])
        conn.close()
    except OSError as error:
        print("failover: cannot SET through the proxy: %s" % error, file=sys.stderr)
        return 3
    bad = [r for r in replies if r != b"OK"]
    if bad:
        print("failover: the first SETs through the proxy failed: %s" % show(bad[0]), file=sys.stderr)
        return 3
    holders = {k: [] for k in keys}
    per_node = {}
    for port in nodes:
        conn = Connection(port)
        found = conn.pipeline([("EXISTS", "k:%d" % k) for k in keys])
        conn.close()
        per_node[port] = sum(1 for f in found if f == 1)
        for k, f in zip(keys, found):
            if f == 1:
                holders[k].append(port)
    misplaced = [k for k in keys if len(holders[k]) != 1]
    if misplaced:
        print("FAIL: key k:%d is held by %d nodes, not one" % (misplaced[0], len(holders[misplaced[0]])))
        return 1
    dead_keys = {k for k in keys if holders[k][0] == args.victim_port}
    print("placement=" + ",".join("%d:%d" % (p, per_node[p]) for p in nodes)
          + " victim_keys=%d" % len(dead_keys))

    start = time.monotonic()
    stop_at = start + args.before + args.after
    # After the kill, each connection SETs only every other one of its keys: the others, on
    # the dead node, are never declared again and must read nil (their results died with it).
    killed = threading.Event()
    loaders = [Loader(i, args.proxy, keys[i::args.connections], keys[i::args.connections][0::2], killed,
                      args.depth, stop_at)
               for i in range(args.connections)]
    for loader in loaders:
        loader.start()
    time.sleep(args.before)
    kill_at = time.monotonic()
    os.kill(args.victim_pid, signal.SIGKILL)
    killed.set()
    # The node is dead once it is a zombie (its parent, scripts/cluster, reaps it later) or
    # gone. A SET sent after that and acknowledged was served by a survivor; one sent between
    # the signal and the death may still have been served by the victim, and counts as before.
    dead_at = None
    while dead_at is None and time.monotonic() < kill_at + 5:
        try:
            with open("/proc/%d/stat" % args.victim_pid) as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    dead_at = time.monotonic()
        except OSError:
            dead_at = time.monotonic()
        if dead_at is None:
            time.sleep(0.0005)
    if dead_at is None:
        print("failover: the victim did not die within 5 s of SIGKILL", file=sys.stderr)
        return 3
    for loader in loaders:
        loader.join()
    end = time.monotonic()
    broken = [l.failure for l in loaders if l.failure]
    if broken:
        print("failover: the load generator failed: %s" % broken[0], file=sys.stderr)
        return 3

    events = sorted(e for l in loaders for e in l.events)
    before = [e for e in events if e[0] < kill_at]
    after = [e for e in events if e[0] >= kill_at]
    failed_before = sum(1 for e in before if e[3] != OK)
    failures = [e for e in after if e[3] != OK]
    # Failures cluster in windows: the ejection, then one short window per retry of the dead
    # node (server_retry_timeout), when the proxy puts it back in the ring and it fails again.
    windows = []
    for event in failures:
        if windows and event[0] - windows[-1][-1][0] < 0.25:
            windows[-1].append(event)
        else:
            windows.append([event])
    lost_in_ejection = len(windows[0]) if windows else 0
    ejection_end = windows[0][-1][0] if windows else kill_at
    recovered = next((e[0] for e in after
                      if e[0] > ejection_end and e[1] >= dead_at and e[3] == OK and e[2] in dead_keys), None)
    reset_after_kill = {e[2] for e in events if e[3] == OK and e[1] >= dead_at}
    rate_before = len(before) / max(kill_at - start, 1e-9)
    rate_after = len(after) / max(end - kill_at, 1e-9)
    errors = {}
    for l in loaders:
        for text, n in l.errors.items():
            errors[text] = errors.get(text, 0) + n
    tail = end - 0.2 * args.after
    silent = [l.index for l in loaders if not any(e[0] >= tail and e[3] == OK for e in l.events)]

    # Let every run finish on the survivors, then read every key back through the proxy.
    deadline = time.monotonic() + 10
    live = None
    while time.monotonic() < deadline:
        live = sum(info_field(p, "live_generations") for p in survivors)
        if live == 0:
            break
        time.sleep(0.02)
    if live != 0:
        print("FAIL: the surviving nodes still had %s runs in flight 10 s after the load stopped" % live)
        return 1
    last_ok, unconfirmed = {}, {}
    for l in loaders:
        last_ok.update(l.last_ok)
        unconfirmed.update(l.unconfirmed)
    values = {}
    pending = list(keys)
    get_errors = 0
    deadline = time.monotonic() + 10
    while pending and time.monotonic() < deadline:
        try:
            conn = Connection(args.proxy)
            replies = conn.pipeline([("GET", "k:%d" % k) for k in pending])
            conn.close()
        except (Closed, OSError):
            time.sleep(0.1)
            continue
        retry = []
        for k, r in zip(pending, replies):
            if isinstance(r, RespError):
                retry.append(k)
            else:
                values[k] = r
        get_errors += len(retry)
        pending = retry
        if pending:
            time.sleep(0.1)
    if pending:
        print("FAIL: %d keys could not be read through the proxy within 10 s" % len(pending))
        return 1

    def expected(k):
        return "i%d" % last_ok.get(k, 0)

    stale, nil_keys, malformed = [], set(), []
    for k in keys:
        value = values[k]
        if value is None:
            nil_keys.add(k)
            continue
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], bytes)):
            malformed.append(k)
            continue
        got = value[0].decode()
        later = {"i%d" % s for s in unconfirmed.get(k, ())}
        if got != expected(k) and got not in later:
            stale.append((k, got, expected(k)))
    should_be_lost = dead_keys - reset_after_kill

    print("requests_before_kill=%d failed_before_kill=%d rate_before=%.0f/s" % (len(before), failed_before, rate_before))
    print("requests_after_kill=%d failed_after_kill=%d rate_after=%.0f/s" % (len(after), len(failures), rate_after))
    print("victim_dead_after_ms=%.2f" % ((dead_at - kill_at) * 1000))
    print("lost_during_ejection=%d ejection_window_ms=%.1f recovered_after_ms=%s retry_windows=%d retry_failures=%d"
          % (lost_in_ejection, (ejection_end - kill_at) * 1000,
             "%.1f" % ((recovered - kill_at) * 1000) if recovered else "never",
             len(windows) - 1 if windows else 0, len(failures) - lost_in_ejection))
    print("errors=" + "; ".join("%s x%d" % (t, n) for t, n in sorted(errors.items())) if errors else "errors=none")
    print("reconnects=%d get_retries=%d" % (sum(l.reconnects for l in loaders), get_errors))
    print("keys=%d victim_keys=%d victim_keys_set_after_kill=%d expected_nil=%d nil=%d stale=%d"
          % (len(keys), len(dead_keys), len(dead_keys & reset_after_kill), len(should_be_lost), len(nil_keys),
             len(stale)))

    failed = False
    if failed_before:
        print("FAIL: %d requests failed before the kill (a node was ejected while alive: proxy timeout?)" % failed_before)
        failed = True
    if not windows:
        print("FAIL: no request failed after the kill; the dead node's keys were never tried")
        failed = True
    elif recovered is None or (recovered - kill_at) * 1000 > args.recover_ms:
        print("FAIL: the dead node's keys were not served again within %d ms of the kill" % args.recover_ms)
        failed = True
    if silent:
        print("FAIL: connections %s got no +OK in the last %.1f s of the load" % (silent, 0.2 * args.after))
        failed = True
    if stale:
        k, got, want = stale[0]
        print("FAIL: %d keys are stale, e.g. k:%d reads %s, last acknowledged %s" % (len(stale), k, got, want))
        failed = True
    if malformed:
        print("FAIL: %d keys read something other than [id, generation], e.g. k:%d" % (len(malformed), malformed[0]))
        failed = True
    if nil_keys != should_be_lost:
        extra = nil_keys - should_be_lost
        missing = should_be_lost - nil_keys
        print("FAIL: the keys lost are not the dead node's keys left unset after the kill: %d nil that should not be, "
              "%d expected nil that are not" % (len(extra), len(missing)))
        failed = True
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("probe")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("command", nargs="+")
    f = sub.add_parser("failover")
    f.add_argument("--proxy", type=int, required=True)
    f.add_argument("--nodes", required=True)
    f.add_argument("--victim-pid", type=int, required=True)
    f.add_argument("--victim-port", type=int, required=True)
    f.add_argument("--keys", type=int, default=2000)
    f.add_argument("--connections", type=int, default=8)
    f.add_argument("--depth", type=int, default=4)
    f.add_argument("--before", type=float, default=2.0)
    f.add_argument("--after", type=float, default=6.0)
    f.add_argument("--recover-ms", type=int, default=2000)
    args = parser.parse_args()
    return probe(args) if args.mode == "probe" else failover(args)


if __name__ == "__main__":
    sys.exit(main())
