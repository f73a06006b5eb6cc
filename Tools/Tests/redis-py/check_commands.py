#!/usr/bin/env python3
"""Drives `taskid serve` with redis-py in its default configuration.

redis-py 8.x connects with RESP3 by default: each new connection sends `HELLO 3`, then
`CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type ...`, `CLIENT SETINFO LIB-NAME redis-py`
and `CLIENT SETINFO LIB-VER <version>` (errors to the last three are ignored). Its default
pipeline is a transaction: `MULTI`, the commands, `EXEC`, in one write.

The same suite runs twice, with `redis.Redis` and with `redis.asyncio.Redis`, each with the
client's defaults (no `protocol=`, `decode_responses=False`). It prints `ok: ...` per check and
exits 1 with the reason at the first failure (0 when all passed, 2 on bad usage).

    check_commands.py --port PORT [--host HOST]

Two options exist for diagnosis only; `scripts/check-redis-py` passes neither:
`--target redis` runs the checks that make sense against a real redis-server (a key holds its
value there: GET returns it, and there is no TASK.PHASE); `--protocol 2` makes redis-py speak
RESP2 (no HELLO on connect, and the HELLO checks are left out).

Only redis-py and the standard library.
"""

import argparse
import asyncio
import inspect
import os
import sys
import time
import traceback

import redis
import redis.asyncio
from redis.exceptions import ExecAbortError, ResponseError


class CheckFailed(Exception):
    pass


last_ok = None


def ok(what):
    global last_ok
    last_ok = what
    print(f"ok: {what}", flush=True)


def expect(got, want, what):
    if got != want:
        raise CheckFailed(f"{what}: got {got!r}, wanted {want!r}")
    ok(what)


def require(condition, what, detail=""):
    if not condition:
        raise CheckFailed(f"{what}{': ' + detail if detail else ''}")
    ok(what)


async def value(result):
    """The value of a client call: awaited for redis.asyncio, as it is for redis.Redis."""
    if inspect.isawaitable(result):
        return await result
    return result


async def expect_error(call, fragment, what):
    """`call()` must raise redis-py's ResponseError whose text contains `fragment`."""
    try:
        got = await value(call())
    except ResponseError as error:
        if fragment.lower() not in str(error).lower():
            raise CheckFailed(f"{what}: ResponseError {str(error)!r} lacks {fragment!r}")
        ok(f"{what} -> ResponseError {str(error)!r}")
        return error
    raise CheckFailed(f"{what}: returned {got!r}, wanted a ResponseError with {fragment!r}")


class Suite:
    """One client's checks. `r` is a redis.Redis or a redis.asyncio.Redis."""

    def __init__(self, options, label, make_client):
        self.options = options
        self.label = label
        self.make_client = make_client
        self.taskid = options.target == "taskid"
        self.tag = f"rp{os.getpid()}:{label}"
        self.created = 0  # keys this suite made that exist now
        self.generations = {}  # key -> generation of its last finished run (taskid)

    def key(self, name):
        return f"{self.tag}:{name}".encode()

    def client(self, **extra):
        kwargs = {"host": self.options.host, "port": self.options.port}
        if self.options.protocol is not None:
            kwargs["protocol"] = self.options.protocol
        kwargs.update(extra)
        return self.make_client(**kwargs)

    async def close(self, client):
        if hasattr(client, "aclose"):
            await client.aclose()
        else:
            client.close()

    # taskid: a SET starts a run; GET answers [id, generation] once it finished.

    async def wait_finished(self, r, key, what):
        if not self.taskid:
            return
        deadline = time.monotonic() + 10
        phase = None
        while time.monotonic() < deadline:
            phase = await value(r.execute_command("TASK.PHASE", key))
            if phase == b"finished":
                return
            if phase not in (b"running", b"waiting"):
                raise CheckFailed(f"{what}: TASK.PHASE {key!r} is {phase!r} while waiting for 'finished'")
            await asyncio.sleep(0.002)
        raise CheckFailed(f"{what}: TASK.PHASE {key!r} still {phase!r} after 10 s")

    def stored(self, ident, generation):
        """What GET answers for a key whose last finished run had `ident`."""
        return [ident, str(generation).encode()] if self.taskid else ident

    async def set_and_wait(self, r, key, ident, generation, what):
        expect(await value(r.set(key, ident)), True, f"{what}: set({key!r}, {ident!r})")
        await self.wait_finished(r, key, what)
        expect(await value(r.get(key)), self.stored(ident, generation), f"{what}: get({key!r})")

    async def run(self):
        print(f"--- {self.label}", flush=True)
        r = self.client()
        try:
            await self.connect(r)
            await self.basics(r)
            await self.keys(r)
            await self.binary(r)
            await self.server_commands(r)
            await self.hello()
            await self.transaction(r)
            await self.bulk_pipeline(r)
            await self.errors(r)
            await self.extra(r)
        finally:
            await self.close(r)

    async def connect(self, r):
        try:
            pong = await value(r.ping())
        except redis.RedisError as error:
            raise CheckFailed(
                f"connect and PING with redis-py's defaults (handshake HELLO 3, CLIENT SETINFO ...) failed: "
                f"{type(error).__name__}: {error}"
            )
        expect(pong, True, "ping() after the default handshake")
        # The handshake itself, seen on a connection of its own.
        s = self.client(single_connection_client=True)
        try:
            await value(s.ping())
            connection = s.connection
            if self.options.protocol is None:
                expect(connection.protocol, 3, "redis-py's default protocol is RESP3")
                # redis.Redis keeps the handshake's reply; redis.asyncio does not (self.hello()
                # checks HELLO's reply there).
                if hasattr(connection, "handshake_metadata"):
                    meta = connection.handshake_metadata
                    require(isinstance(meta, dict), "the HELLO 3 handshake answered a map", repr(meta))
                    expect(meta.get(b"proto"), 3, "the handshake map's proto")
            else:
                expect(connection.protocol, self.options.protocol, "the protocol asked for")
        finally:
            await self.close(s)

    async def basics(self, r):
        expect(await value(r.echo(b"hello")), b"hello", "echo(b'hello')")
        expect(await value(r.echo(b"\xff\xfe")), b"\xff\xfe", "echo(b'\\xff\\xfe') byte-exact")
        payload = b"\x00\x80\xc3\x28\r\n\xff end"
        expect(await value(r.echo(payload)), payload, f"echo({payload!r}) byte-exact")
        expect(await value(r.echo("héllo")), "héllo".encode(), "echo('héllo') as UTF-8")
        expect(await value(r.execute_command("PING", "hi")), False, "PING hi answers the message, not PONG (redis-py maps any reply but PONG to False)")
        self.base_size = await value(r.dbsize())
        require(isinstance(self.base_size, int) and self.base_size >= 0, f"dbsize() = {self.base_size!r}")

    async def keys(self, r):
        k1, k2, missing = self.key("k1"), self.key("k2"), self.key("missing")
        self.info_before = await value(r.info())  # the counters before this suite's SETs
        expect(await value(r.get(missing)), None, "get(missing) is None")
        if self.taskid:
            expect(await value(r.execute_command("TASK.PHASE", missing)), None, "TASK.PHASE missing is None")
            expect(await value(r.set(k1, "alpha")), True, "set(k1, 'alpha')")
            phase = await value(r.execute_command("TASK.PHASE", k1))
            require(
                phase in (b"waiting", b"running", b"finished"),
                f"TASK.PHASE k1 right after SET is {phase!r}",
                "wanted waiting, running or finished as a simple string",
            )
            await self.wait_finished(r, k1, "k1")
            expect(await value(r.get(k1)), [b"alpha", b"1"], "get(k1) is [id, generation]")
            expect(await value(r.execute_command("TASK.PHASE", k1)), b"finished", "TASK.PHASE k1")
        else:
            await self.set_and_wait(r, k1, b"alpha", 1, "k1")
        self.created += 1
        # A new id restarts the work: generation 2. An equal id changes nothing.
        await self.set_and_wait(r, k1, b"beta", 2, "k1 new id")
        await self.set_and_wait(r, k1, b"beta", 2, "k1 equal id")
        await self.set_and_wait(r, k2, b"gamma", 1, "k2")
        self.created += 1
        expect(await value(r.exists(k1)), 1, "exists(k1)")
        expect(await value(r.exists(k1, k2, missing)), 2, "exists(k1, k2, missing)")
        expect(await value(r.dbsize()), self.base_size + self.created, "dbsize() counts the new keys")
        expect(await value(r.delete(k2, missing)), 1, "delete(k2, missing)")
        self.created -= 1
        expect(await value(r.exists(k2)), 0, "exists(k2) after delete")
        expect(await value(r.get(k2)), None, "get(k2) after delete is None")
        if self.taskid:
            expect(await value(r.execute_command("TASK.PHASE", k2)), None, "TASK.PHASE k2 after delete is None")
        expect(await value(r.delete(k2)), 0, "delete(k2) again")
        expect(await value(r.dbsize()), self.base_size + self.created, "dbsize() after delete")

    async def binary(self, r):
        # Keys and ids are bytes: not UTF-8 bytes must come back as sent, and two keys (or ids)
        # that differ only in such bytes must stay different (a lossy decoding would merge them).
        key = self.key("bin") + b":\xff\xfe\x00\x80"
        twin = self.key("bin") + b":\xff\xfd\x00\x80"
        ident = b"\xc3\x28\xff\x00id\r\n"
        await self.set_and_wait(r, key, ident, 1, "binary key and id")
        self.created += 1
        expect(await value(r.exists(key)), 1, "exists(binary key)")
        expect(await value(r.exists(twin)), 0, "a key differing only in a non-UTF-8 byte does not exist")
        expect(await value(r.get(twin)), None, "get(that key) is None")
        ids = self.key("ids")
        await self.set_and_wait(r, ids, b"\xff", 1, "id b'\\xff'")
        self.created += 1
        await self.set_and_wait(r, ids, b"\xfe", 2, "id b'\\xfe' is a new id (generation 2)")
        expect(await value(r.delete(key)), 1, "delete(binary key)")
        self.created -= 1
        expect(await value(r.exists(key)), 0, "exists(binary key) after delete")

    async def server_commands(self, r):
        info = await value(r.info())
        require(isinstance(info, dict), "info() parses into a dict", repr(info)[:200])
        expect(info.get("tcp_port"), self.options.port, "info()['tcp_port']")
        clients = info.get("connected_clients")
        require(isinstance(clients, int) and clients >= 1, f"info()['connected_clients'] = {clients!r}")
        if self.taskid:
            # This suite's SETs so far: k1 alpha, beta, beta again; k2; the binary key; ids \xff
            # then \xfe. Six runs started, two of them restarts (a new id for a key), and the
            # server is this check's own: the counters grew by exactly that much.
            delta = {}
            for field in ("declared", "started", "restarted"):
                before, after = self.info_before.get(field), info.get(field)
                require(
                    isinstance(before, int) and isinstance(after, int),
                    f"info()['{field}'] = {after!r} (before this suite's SETs: {before!r})",
                )
                delta[field] = after - before
            require(delta["declared"] >= 7, f"info()['declared'] grew by {delta['declared']}, at least the 7 SETs")
            expect(delta["started"], 6, "info()['started'] grew by the 6 runs")
            expect(delta["restarted"], 2, "info()['restarted'] grew by the 2 id changes")
        else:
            require("redis_version" in info, "info() has redis_version")
        maxclients = await value(r.config_get("maxclients"))
        require(
            isinstance(maxclients, dict) and list(maxclients) == ["maxclients"] and maxclients["maxclients"].isdigit(),
            f"config_get('maxclients') = {maxclients!r}",
        )
        expect(await value(r.config_get("appendonly")), {"appendonly": "no"}, "config_get('appendonly')")
        expect(await value(r.config_get("save")), {"save": ""}, "config_get('save')")
        expect(await value(r.config_get("no-such-parameter")), {}, "config_get('no-such-parameter')")
        client_id = await value(r.client_id())
        require(isinstance(client_id, int) and client_id >= 0, f"client_id() = {client_id!r} is an integer")
        expect(await value(r.client_getname()), None, "client_getname() is None (no name set)")
        expect(await value(r.execute_command("SELECT", 0)), True, "SELECT 0")
        if self.taskid:
            await expect_error(lambda: r.execute_command("SELECT", 1), "out of range", "SELECT 1")
        await expect_error(lambda: r.execute_command("SELECT", 99), "out of range", "SELECT 99")
        expect(await value(r.ping()), True, "ping() after SELECT errors")

    async def hello(self):
        if self.options.protocol == 2:
            print("skip: HELLO (--protocol 2)", flush=True)
            return
        s = self.client(single_connection_client=True)
        try:
            reply = await value(s.execute_command("HELLO", 3))
            require(isinstance(reply, dict), "HELLO 3 answers a map", repr(reply)[:200])
            want = [b"server", b"version", b"proto", b"id", b"mode", b"role", b"modules"]
            expect(sorted(reply), sorted(want), "HELLO 3's fields")
            expect(reply[b"proto"], 3, "HELLO 3's proto")
            require(isinstance(reply[b"server"], bytes) and reply[b"server"], f"HELLO 3's server {reply[b'server']!r}")
            require(isinstance(reply[b"version"], bytes) and reply[b"version"], f"HELLO 3's version {reply[b'version']!r}")
            expect(reply[b"mode"], b"standalone", "HELLO 3's mode")
            expect(reply[b"role"], b"master", "HELLO 3's role")
            expect(reply[b"modules"], [], "HELLO 3's modules")
            require(isinstance(reply[b"id"], int), f"HELLO 3's id {reply[b'id']!r} is an integer")
            expect(await value(s.client_id()), reply[b"id"], "CLIENT ID is HELLO's id on the same connection")
            # HELLO 2 switches the connection to RESP2: a flat array, and RESP2 nulls after it.
            flat = await value(s.execute_command("HELLO", 2))
            require(isinstance(flat, list) and len(flat) == 14, "HELLO 2 answers a flat array of 14", repr(flat)[:200])
            fields = dict(zip(flat[0::2], flat[1::2]))
            expect(fields.get(b"proto"), 2, "HELLO 2's proto")
            expect(await value(s.get(self.key("missing"))), None, "get(missing) is None after HELLO 2")
            again = await value(s.execute_command("HELLO", 3))
            require(isinstance(again, dict) and again.get(b"proto") == 3, "HELLO 3 again answers a map", repr(again)[:200])
            expect(await value(s.get(self.key("missing"))), None, "get(missing) is None after HELLO 3")
            await expect_error(lambda: s.execute_command("HELLO", 4), "", "HELLO 4 (unsupported protocol)")
            expect(await value(s.ping()), True, "ping() after HELLO 4")
        finally:
            await self.close(s)

    async def transaction(self, r):
        t, missing = self.key("tx"), self.key("missing")
        p = r.pipeline()
        # redis.asyncio names the flag is_transaction; redis.Redis, transaction.
        flag = p.is_transaction if hasattr(p, "is_transaction") else p.transaction
        expect(flag, True, "the default pipeline is a transaction (MULTI ... EXEC)")
        p.set(t, b"one")
        p.exists(t)
        p.echo(b"\xff\x00")
        p.get(missing)
        p.dbsize()
        p.execute_command("PING")
        results = await value(p.execute())
        expect(
            results,
            [True, 1, b"\xff\x00", None, self.base_size + self.created + 1, True],
            "pipeline(): set, exists, echo, get(missing), dbsize, ping",
        )
        self.created += 1
        await self.wait_finished(r, t, "tx")
        expect(await value(r.get(t)), self.stored(b"one", 1), "get(tx) after the transaction")
        # A command that fails when it runs does not stop the others (as Redis).
        p = r.pipeline()
        p.set(t, b"two")
        p.execute_command("SELECT", 99)
        p.exists(t)
        results = await value(p.execute(raise_on_error=False))
        require(
            len(results) == 3 and results[0] is True and isinstance(results[1], ResponseError) and results[2] == 1,
            "pipeline() with a command failing at EXEC: the others still run",
            repr(results),
        )
        require("out of range" in str(results[1]), f"its error: {str(results[1])!r}")
        await self.wait_finished(r, t, "tx")
        expect(await value(r.get(t)), self.stored(b"two", 2), "get(tx) after the second transaction")
        # A command refused while queuing (wrong arity, unknown name) aborts the whole EXEC.
        p = r.pipeline()
        p.set(t, b"three")
        p.execute_command("SET", t)
        p.execute_command("NO.SUCH.COMMAND", t)
        try:
            results = await value(p.execute())
        except ResponseError as error:
            require("wrong number of arguments" in str(error), f"pipeline() with a bad command raises {str(error)!r}")
        else:
            raise CheckFailed(f"pipeline() with a wrong-arity SET returned {results!r}, wanted ResponseError (EXECABORT)")
        await self.wait_finished(r, t, "tx")
        expect(await value(r.get(t)), self.stored(b"two", 2), "EXECABORT: the queued SET did not run")
        expect(await value(r.ping()), True, "ping() after EXECABORT")
        await self.transaction_by_hand(t)

    async def transaction_by_hand(self, t):
        """MULTI, EXEC and DISCARD sent one by one on a connection of their own: the replies
        that redis-py's pipeline reads but does not show (QUEUED, EXECABORT)."""
        s = self.client(single_connection_client=True)
        # SET's callback turns its reply into True or False: show the raw reply instead (QUEUED).
        s.set_response_callback("SET", lambda response, **options: response)
        try:
            expect(await value(s.execute_command("MULTI")), b"OK", "MULTI")
            expect(await value(s.execute_command("SET", t, b"four")), b"QUEUED", "SET while queuing -> QUEUED")
            await expect_error(lambda: s.execute_command("MULTI"), "nested", "MULTI inside MULTI")
            await expect_error(lambda: s.execute_command("SET", t), "wrong number of arguments", "SET t while queuing")
            try:
                got = await value(s.execute_command("EXEC"))
            except ExecAbortError as error:
                require("EXECABORT" in str(error) or "discarded" in str(error), f"EXEC -> ExecAbortError {str(error)!r}")
            else:
                raise CheckFailed(f"EXEC after a refused command returned {got!r}, wanted ExecAbortError (EXECABORT)")
            await expect_error(lambda: s.execute_command("EXEC"), "without MULTI", "EXEC after EXECABORT")
            expect(await value(s.execute_command("MULTI")), b"OK", "MULTI again")
            expect(await value(s.execute_command("SET", t, b"five")), b"QUEUED", "SET -> QUEUED")
            expect(await value(s.execute_command("DISCARD")), b"OK", "DISCARD")
            await expect_error(lambda: s.execute_command("DISCARD"), "without MULTI", "DISCARD without MULTI")
            await self.wait_finished(s, t, "tx")
            expect(await value(s.get(t)), self.stored(b"two", 2), "neither the aborted nor the discarded SET ran")
            expect(await value(s.execute_command("MULTI")), b"OK", "MULTI, then EXEC of an empty transaction")
            expect(await value(s.execute_command("EXEC")), [], "EXEC of nothing -> []")
        finally:
            await self.close(s)

    async def bulk_pipeline(self, r):
        n = 1000
        keys = [self.key(f"bulk:{i}") for i in range(n)]
        ids = [f"id-{i}".encode() for i in range(n)]
        p = r.pipeline(transaction=False)
        for key, ident in zip(keys, ids):
            p.set(key, ident)
        results = await value(p.execute())
        expect(results, [True] * n, f"pipeline(transaction=False) with {n} SETs")
        self.created += n
        expect(await value(r.dbsize()), self.base_size + self.created, f"dbsize() after {n} SETs")
        if self.taskid:
            deadline = time.monotonic() + 10
            while True:
                p = r.pipeline(transaction=False)
                for key in keys:
                    p.execute_command("TASK.PHASE", key)
                phases = await value(p.execute())
                if all(phase == b"finished" for phase in phases):
                    break
                odd = [phase for phase in phases if phase not in (b"finished", b"running", b"waiting")]
                if odd:
                    raise CheckFailed(f"bulk: unexpected phases {odd[:5]!r}")
                if time.monotonic() > deadline:
                    raise CheckFailed(f"bulk: {sum(ph != b'finished' for ph in phases)} of {n} not finished after 10 s")
                await asyncio.sleep(0.01)
            ok(f"all {n} runs finished")
        p = r.pipeline(transaction=False)
        for key in keys:
            p.get(key)
        got = await value(p.execute())
        expect(got, [self.stored(ident, 1) for ident in ids], f"pipeline(transaction=False) with {n} GETs")
        expect(await value(r.delete(*keys)), n, f"delete() of the {n} keys")
        self.created -= n

    async def errors(self, r):
        k = self.key("syntax")
        await expect_error(lambda: r.execute_command("SET", k, "v", "EXTRA"), "syntax error", "SET k v EXTRA")
        expect(await value(r.exists(k)), 0, "SET k v EXTRA created nothing")
        await expect_error(lambda: r.execute_command("SET", k), "wrong number of arguments", "SET k")
        await expect_error(lambda: r.execute_command("NO.SUCH.COMMAND", "x"), "unknown command", "NO.SUCH.COMMAND x")
        expect(await value(r.ping()), True, "ping() after the errors")
        expect(await value(r.dbsize()), self.base_size + self.created, "dbsize() after the errors")

    async def extra(self, r):
        pass


class AsyncSuite(Suite):
    async def extra(self, r):
        # Many commands at once: the pool opens several connections, each with its handshake.
        payloads = [bytes([i, 0xFF - i, 0x80]) + b"-%d" % i for i in range(50)]
        got = await asyncio.gather(*(r.echo(payload) for payload in payloads))
        expect(list(got), payloads, "50 concurrent echo() calls, each its own answer")
        require(
            len(r.connection_pool._available_connections) > 1,
            f"they used {len(r.connection_pool._available_connections)} connections",
        )
        keys = [self.key(f"gather:{i}") for i in range(20)]
        expect(
            list(await asyncio.gather(*(r.set(key, b"g%d" % i) for i, key in enumerate(keys)))),
            [True] * 20,
            "20 concurrent set() calls",
        )
        self.created += 20
        for key in keys:
            await self.wait_finished(r, key, "gather")
        got = await asyncio.gather(*(r.get(key) for key in keys))
        expect(list(got), [self.stored(b"g%d" % i, 1) for i in range(20)], "20 concurrent get() calls")
        expect(await r.delete(*keys), 20, "delete() of those keys")
        self.created -= 20


async def main(options):
    await Suite(options, "sync", redis.Redis).run()
    await AsyncSuite(options, "async", redis.asyncio.Redis).run()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Drives taskid serve with redis-py's default client.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--target", choices=["taskid", "redis"], default="taskid", help="diagnosis only")
    parser.add_argument("--protocol", type=int, choices=[2, 3], help="diagnosis only (default: redis-py's)")
    options = parser.parse_args()
    print(f"redis-py {redis.__version__}, {options.host}:{options.port}, target {options.target}", flush=True)
    try:
        asyncio.run(main(options))
    except CheckFailed as failure:
        print(f"check_commands: FAILED: {failure}", file=sys.stderr, flush=True)
        sys.exit(1)
    except Exception as error:  # a client error, or a reply redis-py could not take apart
        traceback.print_exc()
        print(
            f"check_commands: FAILED after the check '{last_ok}': {type(error).__name__}: {error}",
            file=sys.stderr,
            flush=True,
        )
        sys.exit(1)
    print("check_commands: all passed", flush=True)
