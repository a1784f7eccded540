"""The binary over real pipes: a spawned server with reader threads, one-shot runs, and draining a
store. Re-exported by conftest.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

# ---------------------------------------------------------------------------------------------
# JSON helpers
# ---------------------------------------------------------------------------------------------


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def rpc(method: str, params: dict | None = None, id: Any = None) -> dict:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params if params is not None else {}}
    if id is not None:
        msg["id"] = id
    return msg


def strict_equal(a: Any, b: Any) -> bool:
    """Equality that also requires the same JSON types: 1 != 1.0 != True, recursively."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
    return a == b


# ---------------------------------------------------------------------------------------------
# A spawned server with pipes and reader threads
# ---------------------------------------------------------------------------------------------


class Outbox:
    """The binary on a store, with stdin/stdout/stderr pipes.

    A reader thread parses every complete stdout line as it streams (responses to batches are
    indexed member by member), so replies are collected even if the process is killed later.
    A partial last line (cut by a kill) is kept apart in `partial` and never counted.
    """

    def __init__(
        self,
        binary: Path,
        store: Path | None,
        *args: str,
        fsync: str | None = None,
        snapshot_interval: float | str | None = None,
        preexec_fn: Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        argv = [str(binary)]
        if store is not None:
            argv += ["--store", str(store)]
        if fsync is not None:
            argv += ["--fsync", fsync]
        if snapshot_interval is not None:
            argv += ["--snapshot-interval", str(snapshot_interval)]
        argv += list(args)
        self.argv = argv
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=preexec_fn,
            env=full_env,
            bufsize=0,
        )
        self.pid = self.proc.pid
        self.cond = threading.Condition()
        self.lines: list[Any] = []  # every parsed stdout line, in order
        self.by_id: dict[Any, dict] = {}
        self.bad_lines: list[bytes] = []
        self.partial = b""
        self.eof = False
        self.stderr_chunks: list[bytes] = []
        self._next_id = 1_000_000_000
        self._send_lock = threading.Lock()
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()

    # -- reading --------------------------------------------------------------------------

    def _read_stdout(self) -> None:
        stream = self.proc.stdout
        buf = b""
        while True:
            chunk = stream.read(1 << 16)
            if not chunk:
                break
            buf += chunk
            *complete, buf = buf.split(b"\n")
            if complete:
                parsed = []
                for raw in complete:
                    try:
                        parsed.append(json.loads(raw))
                    except ValueError:
                        self.bad_lines.append(raw)
                with self.cond:
                    for value in parsed:
                        self.lines.append(value)
                        for member in value if isinstance(value, list) else [value]:
                            if isinstance(member, dict) and member.get("id") is not None:
                                self.by_id[member["id"]] = member
                    self.cond.notify_all()
        with self.cond:
            self.partial = buf
            self.eof = True
            self.cond.notify_all()

    def _read_stderr(self) -> None:
        while True:
            chunk = self.proc.stderr.read(4096)
            if not chunk:
                return
            self.stderr_chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    # -- writing --------------------------------------------------------------------------

    def write_raw(self, data: bytes) -> bool:
        """Writes bytes to stdin; False once the process is gone."""
        try:
            with self._send_lock:
                self.proc.stdin.write(data)
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def send(self, *messages: Any) -> bool:
        return self.write_raw("".join(dumps(m) + "\n" for m in messages).encode())

    def new_id(self) -> int:
        with self._send_lock:
            self._next_id += 1
            return self._next_id

    def wait_ids(self, ids: Iterable[Any], timeout: float = 15.0) -> list[dict]:
        ids = list(ids)
        deadline = time.monotonic() + timeout
        with self.cond:
            while not all(i in self.by_id for i in ids):
                left = deadline - time.monotonic()
                if left <= 0 or self.eof:
                    missing = [i for i in ids if i not in self.by_id]
                    raise AssertionError(
                        f"no response for ids {missing[:5]} (eof={self.eof}, rc={self.proc.poll()}, "
                        f"stderr={self.stderr[-500:]!r})"
                    )
                self.cond.wait(min(left, 0.5))
            return [self.by_id[i] for i in ids]

    def call(self, method: str, params: dict | None = None, timeout: float = 15.0) -> dict:
        """Sends one request and waits for its response (the whole response object)."""
        rid = self.new_id()
        assert self.send(rpc(method, params, rid)), f"stdin closed (rc={self.proc.poll()}, stderr={self.stderr!r})"
        return self.wait_ids([rid], timeout)[0]

    def result(self, method: str, params: dict | None = None, timeout: float = 15.0) -> Any:
        response = self.call(method, params, timeout)
        assert "result" in response, f"{method} failed: {response}"
        return response["result"]

    # -- ending ---------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL, after checking the process had not died on its own."""
        rc = self.proc.poll()
        assert rc is None, f"process exited on its own before the kill: rc={rc}, stderr={self.stderr[-2000:]!r}"
        os.kill(self.pid, signal.SIGKILL)
        rc = self.proc.wait(10)
        assert rc == -signal.SIGKILL, f"unexpected exit status {rc} after SIGKILL"
        self.join()

    def close(self, timeout: float = 20.0, expect: int | None = 0) -> int:
        """Closes stdin (EOF: clean shutdown) and waits for the exit code."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"process did not exit within {timeout}s after EOF; stderr={self.stderr[-2000:]!r}")
        self.join()
        if expect is not None:
            assert rc == expect, f"exit code {rc}, expected {expect}; stderr={self.stderr[-2000:]!r}"
        return rc

    def join(self) -> None:
        self._out.join(10)
        self._err.join(10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.join()



def run_once(binary: Path, store: Path, *args: str, input: bytes = b"", timeout: float = 10.0) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    return subprocess.run(
        [str(binary), "--store", str(store), *args], input=input, capture_output=True, timeout=timeout, env=env
    )


# ---------------------------------------------------------------------------------------------
# Recovering a store and taking everything out
# ---------------------------------------------------------------------------------------------


class Flushed:
    def __init__(self, items: list[dict], status: dict, stderr: str) -> None:
        self.items = items
        self.status = status
        self.stderr = stderr

    @property
    def recovery_codes(self) -> list[str]:
        return [w.get("code") for w in self.status.get("recovery", [])]

    def warnings(self, code: str) -> list[dict]:
        return [w for w in self.status.get("recovery", []) if w.get("code") == code]


def flush_all(binary: Path, store: Path, *args: str, check: Callable[[Outbox], None] | None = None) -> Flushed:
    """Starts the binary on `store`, reads `status`, drains everything (flushPending without max,
    repeated until nothing remains), shuts down with EOF and requires exit code 0.

    `check(outbox)`, if given, runs after `status` and before the drain (the process is live)."""
    ob = Outbox(binary, store, *args)
    try:
        status = ob.result("status")
        if check is not None:
            check(ob)
        items: list[dict] = []
        for _ in range(1000):
            res = ob.result("flushPending", {}, timeout=60)
            assert "leaseExpiresAt" not in res
            items.extend(res["items"])
            if res["remaining"] == 0:
                break
        ob.close(timeout=30, expect=0)
        assert not ob.bad_lines, f"non-JSON stdout lines: {ob.bad_lines[:3]}"
        seqs = [it["seq"] for it in items]
        assert seqs == sorted(seqs), "flushPending returned items out of seq order"
        return Flushed(items, status, ob.stderr)
    finally:
        ob.ensure_dead()


def status_only(binary: Path, store: Path, *args: str) -> dict:
    ob = Outbox(binary, store, *args)
    try:
        status = ob.result("status")
        ob.close(expect=0)
        return status
    finally:
        ob.ensure_dead()


