"""Shared helpers for the push-outbox fault-injection tests.

Every test spawns the real binary (env PUSH_OUTBOX_BIN, else .build/debug/push-outbox in the
repository) on a store directory under pytest's tmp_path, injects a fault, restarts, and checks:

* every save answered ok is still there, exactly once, same id, same seq, same typed values;
* nothing is invented (recovered items are a subset of what was sent);
* the process never dies on its own (exit code 0 or the documented one, never a signal we did not send).

Python 3.11 stdlib + pytest (+ pytest-timeout for the per-test timeout marks).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import pytest

REPO = Path(__file__).resolve().parents[2]

# Summary lines (e.g. "fault: rounds=20 acknowledged=N lost=0") shown at the end of the run,
# so they are visible without `pytest -s`.
SUMMARY: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    # Harmless if pytest-timeout is installed (it registers the marker itself); avoids an
    # "unknown marker" warning if it is not.
    config.addinivalue_line("markers", "timeout(seconds): per-test timeout (pytest-timeout)")


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:  # noqa: ANN001
    if SUMMARY:
        terminalreporter.section("fault-injection summary")
        for line in SUMMARY:
            terminalreporter.write_line(line)


def report(line: str) -> None:
    """Prints a summary line now (visible with -s) and again in the terminal summary."""
    print(line, flush=True)
    SUMMARY.append(line)


# ---------------------------------------------------------------------------------------------
# Binary discovery
# ---------------------------------------------------------------------------------------------


def find_binary() -> Path | None:
    env = os.environ.get("PUSH_OUTBOX_BIN")
    if env:
        return Path(env)
    for candidate in (REPO / ".build" / "debug" / "push-outbox", REPO / ".build" / "release" / "push-outbox"):
        if candidate.exists():
            return candidate
    return None


@pytest.fixture(scope="session")
def outbox_bin() -> Path:
    path = find_binary()
    if path is None or not os.access(path, os.X_OK):
        pytest.fail(
            f"push-outbox binary not found ({path or REPO / '.build/debug/push-outbox'}); "
            "run `swift build` or set PUSH_OUTBOX_BIN",
            pytrace=False,
        )
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A fresh (not yet existing) store directory."""
    return tmp_path / "store"


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


@pytest.fixture
def spawn(outbox_bin: Path):
    """spawn(store, *args, **kw) -> Outbox; every process still running at teardown is killed."""
    started: list[Outbox] = []

    def _spawn(store: Path | None, *args: str, **kw: Any) -> Outbox:
        ob = Outbox(outbox_bin, store, *args, **kw)
        started.append(ob)
        return ob

    yield _spawn
    for ob in started:
        ob.ensure_dead()


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


# ---------------------------------------------------------------------------------------------
# Building saves and checking items against them
# ---------------------------------------------------------------------------------------------


class Ledger:
    """What was sent and what was acknowledged, keyed by a unique number n carried in the user id
    (`user.externalId == "n<n>"`), so every recovered item can be traced to its request."""

    def __init__(self) -> None:
        self.sent: dict[int, tuple[str, dict]] = {}  # n -> (method, params)
        self.acked: dict[int, tuple[str, int]] = {}  # n -> (item id, seq) from an ok answer
        self.request_n: dict[Any, int] = {}  # request id -> n
        self.errors: list[dict] = []

    def record(self, request_id: Any, n: int, method: str, params: dict) -> dict:
        self.sent[n] = (method, params)
        self.request_n[request_id] = n
        return rpc(method, params, request_id)

    def absorb(self, responses: Iterable[dict]) -> None:
        for response in responses:
            n = self.request_n.get(response.get("id"))
            if n is None:
                continue
            if "result" in response:
                res = response["result"]
                previous = self.acked.get(n)
                assert previous is None or previous == (res["id"], res["seq"]), (
                    f"two answers for n={n} disagree: {previous} vs {res}"
                )
                self.acked[n] = (res["id"], res["seq"])
            else:
                self.errors.append(response)

    def absorb_outbox(self, ob: Outbox) -> None:
        with ob.cond:
            responses = list(ob.by_id.values())
        self.absorb(responses)


ATTRIBUTE_FIELDS = ["first_name", "last_name", "home_city"]


def make_save(rng, n: int, client_id: str | None = None) -> tuple[str, dict]:
    """A save with typed values that must survive exactly: ints (some beyond 2^53), bools,
    floats, strings (non-ASCII), arrays and nested objects."""
    user = {"externalId": f"n{n}"}
    roll = rng.random()
    if roll < 0.6:
        props: dict[str, Any] = {
            "n": n,
            "big": 2**53 + n,
            "neg": -n,
            "b": n % 2 == 0,
            "f": n + 0.25,
            "s": f"é{n}😀",
            "o": {"a": [1, True, "z", 2.5], "k": n % 3 == 0},
        }
        if rng.random() < 0.3:
            props["pad"] = "x" * rng.randrange(0, 250)
        params = {"name": f"evt_{n % 5}", "properties": props, "user": user}
        method = "saveCustomEvent"
    elif roll < 0.85:
        value = rng.choice(
            [n, 2**60 + n, n % 2 == 1, n + 0.5, f"v{n}", [f"a{n}", "b"], {"x": n, "y": True, "z": [1.5, False]}]
        )
        params = {"key": f"attr_{n % 7}", "value": value, "user": user}
        method = "saveCustomAttribute"
    else:
        params = {"field": ATTRIBUTE_FIELDS[n % 3], "value": f"val{n}", "user": user}
        method = "saveUserAttribute"
    if client_id is not None:
        params["id"] = client_id
    return method, params


def save_run(binary: Path, store: Path, ledger: Ledger, rng: random.Random, ns: range, end: str) -> None:
    """One process: saves `ns` one burst at a time (fsync always, no timed snapshot), then ends
    with kill -9 (`end="kill"`) or EOF (`end="eof"`: clean exit, final snapshot)."""
    ob = Outbox(binary, store, fsync="always", snapshot_interval=3600)
    try:
        for n in ns:
            ob.send(ledger.record(n, n, *make_save(rng, n)))
            ledger.absorb(ob.wait_ids([n]))
        if end == "kill":
            ob.kill9()
        else:
            ob.close(expect=0)
    finally:
        ob.ensure_dead()
    assert not ledger.errors, ledger.errors


def item_n(item: dict) -> int | None:
    ext = (item.get("user") or {}).get("externalId", "")
    return int(ext[1:]) if ext.startswith("n") and ext[1:].isdigit() else None


def item_matches(item: dict, method: str, params: dict) -> str | None:
    """None if `item` is exactly what `params` asked to save, else why not."""
    def differ(field: str, got: Any, want: Any) -> str | None:
        return None if strict_equal(got, want) else f"{field}: stored {got!r}, sent {want!r}"

    kinds = {"saveCustomEvent": "customEvent", "saveCustomAttribute": "customAttribute", "saveUserAttribute": "userAttribute"}
    checks = [differ("kind", item.get("kind"), kinds[method]), differ("user", item.get("user"), params.get("user"))]
    if "id" in params:
        checks.append(differ("id", item.get("id"), params["id"]))
    if method == "saveCustomEvent":
        checks += [
            differ("name", item.get("name"), params["name"]),
            differ("properties", item.get("properties"), params.get("properties", {})),
        ]
    elif method == "saveCustomAttribute":
        checks += [
            differ("key", item.get("key"), params["key"]),
            differ("op", item.get("op"), params.get("op", "set")),
            differ("value", item.get("value"), params["value"]),
        ]
    else:
        checks += [differ("field", item.get("field"), params["field"]), differ("value", item.get("value"), params["value"])]
    problems = [c for c in checks if c]
    return "; ".join(problems) if problems else None


def check_invariants(items: list[dict], ledger: Ledger, allowed_extra: set[int] = frozenset()) -> tuple[int, list[str]]:
    """acknowledged ⊆ recovered (same id, seq and typed values), no duplicates, recovered ⊆ sent.

    Returns (number of acknowledged items lost, list of problems)."""
    problems: list[str] = []
    by_n: dict[int, dict] = {}
    seen_ids: set[str] = set()
    seen_seqs: set[int] = set()
    for item in items:
        n = item_n(item)
        if item["id"] in seen_ids:
            problems.append(f"duplicate id {item['id']}")
        if item["seq"] in seen_seqs:
            problems.append(f"duplicate seq {item['seq']}")
        seen_ids.add(item["id"])
        seen_seqs.add(item["seq"])
        if n is None or (n not in ledger.sent and n not in allowed_extra):
            problems.append(f"invented item (never sent): {item}")
            continue
        if n in by_n:
            problems.append(f"request n={n} stored twice: {by_n[n]['id']} and {item['id']}")
        by_n[n] = item
        if n in ledger.sent:
            why = item_matches(item, *ledger.sent[n])
            if why:
                problems.append(f"n={n} id={item['id']}: {why}")
        for key in ("savedAt", "deliveryCount"):
            if key not in item:
                problems.append(f"n={n}: item lacks {key}")
    lost = 0
    for n, (iid, seq) in ledger.acked.items():
        item = by_n.get(n)
        if item is None:
            lost += 1
            problems.append(f"LOST acknowledged save n={n} id={iid} seq={seq}")
        elif item["id"] != iid or item["seq"] != seq:
            problems.append(f"n={n}: acknowledged as id={iid} seq={seq}, recovered as id={item['id']} seq={item['seq']}")
    return lost, problems


# ---------------------------------------------------------------------------------------------
# Store files (formats 1 and 2), faults on the file system: store_files.py, faults.py
# ---------------------------------------------------------------------------------------------

from store_files import *  # noqa: E402,F401,F403
from faults import *  # noqa: E402,F401,F403
