"""The Redis baseline (issue 21): what a pipeline user would pick instead of push-outbox, a Redis list with
the append-only file, `appendonly yes`, `appendfsync everysec` (the policy of push-outbox's default) and no
RDB snapshots, fed by `redis-cli --pipe` with one RPUSH of each line's params JSON.

Each run starts its own `redis-server` on 127.0.0.1 (an ephemeral port, the run's directory for the AOF),
waits until it answers PING, then times `redis-cli --pipe` from spawn to exit (it exits after the last
reply) and checks its summary: no errors, one reply per line. The server is then shut down and its peak
RSS read. Redis validates nothing and answers with a few bytes; push-outbox checks Braze's rules and
answers with an id. Skipped, with a message, where redis-server or redis-cli is missing (.ci/setup
installs Debian's redis-server).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import time

import procs

LABEL = "redis AOF everysec (RPUSH, redis-cli --pipe)"
KEY = b"outbox"


def available():
    return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None


def missing_message():
    return "redis baseline skipped: redis-server or redis-cli not found (Debian package redis-server; .ci/setup installs it)"


def resp_file(input_path, out_path):
    """Writes one RPUSH outbox <params JSON> per request line, in RESP; returns out_path."""
    with open(input_path, "rb") as src, open(out_path, "wb") as out:
        for line in src:
            if not line.strip():
                continue
            params = json.dumps(
                json.loads(line)["params"], separators=(",", ":"), ensure_ascii=False
            ).encode()
            out.write(
                b"*3\r\n$5\r\nRPUSH\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
                % (len(KEY), KEY, len(params), params)
            )
        out.flush()
        os.fsync(out.fileno())  # as inputs.write: its write-back is not timed with the runs
    return out_path


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(port, *args, stdin=None, timeout=600):
    return subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
        stdin=stdin,
        capture_output=True,
        timeout=timeout,
    )


def runner(resp_path, expect):
    """A row factory for throughput.measure: takes the run's store path, returns a callable that runs
    one timed feed and returns (seconds, peak RSS bytes of the server)."""

    def make(store):
        def run():
            directory = store
            os.makedirs(directory, exist_ok=True)
            port = _free_port()
            server = subprocess.Popen(
                [
                    "redis-server",
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--dir",
                    directory,
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "everysec",
                    "--save",
                    "",
                    "--daemonize",
                    "no",
                    "--protected-mode",
                    "yes",
                    "--logfile",
                    "",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                deadline = time.monotonic() + 10
                while _cli(port, "ping", timeout=5).stdout.strip() != b"PONG":
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise procs.BenchError("redis-server did not start")
                    time.sleep(0.02)
                with open(resp_path, "rb") as feed:
                    start = time.perf_counter()
                    fed = _cli(port, "--pipe", stdin=feed)
                    seconds = time.perf_counter() - start
                summary = re.search(rb"errors: (\d+), replies: (\d+)", fed.stdout)
                if (
                    fed.returncode != 0
                    or not summary
                    or int(summary.group(1)) != 0
                    or int(summary.group(2)) != expect
                ):
                    raise procs.BenchError(
                        f"redis-cli --pipe: {fed.stdout[-200:]!r} {fed.stderr[-200:]!r}"
                    )
                length = _cli(port, "llen", KEY.decode()).stdout.strip()
                if length != str(expect).encode():
                    raise procs.BenchError(f"redis holds {length!r} items, {expect} were pushed")
                _cli(port, "shutdown")
                _, _, usage = os.wait4(server.pid, 0)
                server.returncode = 0
                return seconds, usage.ru_maxrss * 1024
            finally:
                if server.returncode is None:
                    server.kill()
                    server.wait()

        return run

    return make
