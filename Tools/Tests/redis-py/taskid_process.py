"""One `taskid serve` process for the Python checks: started on free ports with its log kept,
its ready line read, stopped with SIGTERM. Shared by check_exposure.py and check_tls.py."""

import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    """Prints the failure, named after the running check, and exits 1."""
    print(f"{os.path.splitext(os.path.basename(sys.argv[0]))[0]}: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def ok(message):
    print(f"ok: {message}", flush=True)


class TaskidServer:
    """`taskid serve ARGUMENTS`, its log in a temporary file; `port` and `tls_port` (None without
    TLS) from its ready line."""

    def __init__(self, taskid, arguments, preexec=None):
        self.log = tempfile.NamedTemporaryFile(prefix="taskid-check-", suffix=".log", delete=False)
        self.process = subprocess.Popen([taskid, "serve", *arguments], stdout=subprocess.PIPE, stderr=self.log,
                                        text=True, preexec_fn=preexec)
        line = self.process.stdout.readline()
        if not line:
            fail(f"taskid serve {' '.join(arguments)} did not start: {self.log_text()[-2000:]}")
        ready = json.loads(line)
        self.port = ready["port"]
        self.tls_port = ready.get("tls_port")

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()

    def rss(self):
        with open(f"/proc/{self.process.pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def stop(self, expect_success=False):
        """SIGTERM, then waits 20 s at most; with `expect_success`, an exit status other than 0
        fails the check."""
        self.process.terminate()
        try:
            status = self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            fail("taskid serve did not stop within 20 s of SIGTERM")
        if expect_success and status != 0:
            fail(f"taskid serve exited {status} after SIGTERM: {self.log_text()[-1000:]}")
        os.unlink(self.log.name)
