"""A model checker over the real binary (issue 15): seeded random sessions on one store directory,
each a sequence of real processes, compared after every restart with a plain model built only from
the replies seen.

Operations: saves of the three kinds, partial and full drains (`flushPending {max}`), leases that
are acked, released or left to expire, and pauses across snapshot intervals. Each process gets a
random `--fsync` policy and `--snapshot-interval`, and ends by stdin EOF, SIGTERM, kill -9, or by
killing itself at one of the store's named points (`PUSH_OUTBOX_KILL_AT`). Requests are sent one
at a time, so at most one is unanswered when a process dies; its effect is uncertain and the model
allows both outcomes for exactly the items it could touch.

Rules checked after each restart, on the ids the store hands out (every item, leases expired):
an acknowledged save whose removal was not acknowledged is held; an item whose removal (drain or
ack) was acknowledged is never held again; nothing is held that no save created.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KILL_POINTS = ["temp", "checkpoint", "rewrite", "deletion", "rotation"]


class Divergence(AssertionError):
    pass


@dataclass
class Stats:
    runs: int = 0
    operations: int = 0
    restarts: int = 0
    kills: int = 0
    kill_points: dict[str, int] = field(default_factory=dict)


@dataclass
class Model:
    held: list[str] = field(default_factory=list)  # acknowledged saves not removed, in save order
    removed: set[str] = field(default_factory=set)  # removal acknowledged: must never come back
    leases: dict[str, list[str]] = field(
        default_factory=dict
    )  # live long leases (durable across restarts)
    maybe_removed: set[str] = field(
        default_factory=set
    )  # an unanswered drain or ack could take these
    unknown_saves: int = 0  # unanswered saves: that many unseen ids may appear


class Process:
    """The binary on the store, one request at a time, replies read by a thread."""

    def __init__(self, binary: str, store: Path, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [binary, "--store", str(store), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.replies: dict[int, dict[str, Any]] = {}
        self.cond = threading.Condition()
        self.eof = False
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self.cond:
                self.replies[reply.get("id")] = reply
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The reply's result (or error object), or None when the process died first."""
        self.next_id += 1
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )
        try:
            assert self.proc.stdin
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        with self.cond:
            self.cond.wait_for(lambda: self.next_id in self.replies or self.eof, timeout=30)
            reply = self.replies.get(self.next_id)
        if reply is None:
            if not self.eof:
                raise Divergence(f"no reply to {method} within 30 s and the process is alive")
            return None
        if "error" in reply:
            raise Divergence(f"{method} answered an error: {reply['error']}")
        return reply["result"]

    def end(self, how: str) -> None:
        if how == "kill":
            self.proc.kill()
        elif how == "term":
            self.proc.send_signal(signal.SIGTERM)
        else:
            try:
                assert self.proc.stdin
                self.proc.stdin.close()
            except OSError:
                pass
        self.proc.wait(timeout=60)
        if how in ("eof", "term") and self.proc.returncode not in (0, -signal.SIGKILL):
            raise Divergence(f"exit code {self.proc.returncode} after {how}")


class Session:
    """One seeded run: several processes on one store."""

    def __init__(self, binary: str, seed: int, stats: Stats, verbose: bool = False) -> None:
        self.binary = binary
        self.rng = random.Random(seed)
        self.seed = seed
        self.stats = stats
        self.verbose = verbose
        self.model = Model()
        self.counter = 0
        self.history: list[str] = []
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))
        }

    def log(self, text: str) -> None:
        self.history.append(text)
        if self.verbose:
            print(f"  seed {self.seed}: {text}", flush=True)

    def run(self, processes: int) -> None:
        root = Path(tempfile.mkdtemp(prefix="push-outbox-model-"))
        try:
            store = root / "store"
            for _ in range(processes):
                self.one_process(store)
                self.check(store)
        except Divergence as error:
            tail = "\n    ".join(self.history[-25:])
            raise Divergence(
                f"seed {self.seed}, step {len(self.history)}: {error}\n  last steps:\n    {tail}"
            ) from None
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def one_process(self, store: Path) -> None:
        rng = self.rng
        fsync = rng.choice(["always", "everysec", "never"])
        interval = rng.choice(["0.05", "0.1", "0.2", "0.3"])
        env = dict(self.env)
        point = None
        if rng.random() < 0.35:
            point = f"{rng.choice(KILL_POINTS)}:{rng.randint(1, 3)}"
            env["PUSH_OUTBOX_KILL_AT"] = point
        self.log(
            f"start --fsync {fsync} --snapshot-interval {interval}"
            + (f" KILL_AT={point}" if point else "")
        )
        proc = Process(self.binary, store, ["--fsync", fsync, "--snapshot-interval", interval], env)
        for _ in range(rng.randint(5, 40)):
            self.stats.operations += 1
            if not self.operation(proc):
                self.log("the process died (kill point)")
                self.stats.kills += 1
                if point:
                    name = point.split(":")[0]
                    self.stats.kill_points[name] = self.stats.kill_points.get(name, 0) + 1
                proc.end("eof")
                return
        how = rng.choice(["eof", "eof", "term", "kill"])
        self.log(f"end by {how}")
        if how == "kill":
            self.stats.kills += 1
        proc.end(how)

    def operation(self, proc: Process) -> bool:
        """One random operation; False when the process died before answering."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.5:
            return self.save(proc)
        if roll < 0.65:
            return self.drain(proc, rng.randint(1, 4) if rng.random() < 0.8 else 1_000_000)
        if roll < 0.78:
            return self.lease(proc)
        if roll < 0.88 and self.model.leases:
            return self.end_lease(proc)
        pause = rng.uniform(0.05, 0.35)
        self.log(f"pause {pause:.2f}")
        time.sleep(pause)
        return proc.proc.poll() is None

    def save(self, proc: Process) -> bool:
        self.counter += 1
        n = f"{self.seed}-{self.counter}"
        kind = self.rng.choice(["saveCustomEvent", "saveCustomAttribute", "saveUserAttribute"])
        user = {"externalId": f"u{n}"}
        params: dict[str, Any] = {
            "saveCustomEvent": {"name": f"e{n}", "user": user},
            "saveCustomAttribute": {"key": f"k{n}", "value": n, "user": user},
            "saveUserAttribute": {"field": "first_name", "value": f"n{n}", "user": user},
        }[kind]
        if self.rng.random() < 0.1:
            params.pop("user")
        result = proc.call(kind, params)
        if result is None:
            self.model.unknown_saves += 1
            self.log(f"{kind} unanswered")
            return False
        self.model.held.append(result["id"])
        self.log(f"{kind} -> {result['id']}")
        return True

    def available(self) -> list[str]:
        leased = {i for ids in self.model.leases.values() for i in ids}
        return [i for i in self.model.held if i not in leased]

    def drain(self, proc: Process, k: int) -> bool:
        candidates = self.available()  # a 50 ms lease may hide some: any available item could go
        result = proc.call("flushPending", {"max": k})
        if result is None:
            self.model.maybe_removed |= set(candidates)
            self.log(f"drain {k} unanswered")
            return False
        ids = [item["id"] for item in result["items"]]
        self.take_out(ids)
        self.log(f"drain {k} -> {len(ids)}")
        return True

    def lease(self, proc: Process) -> bool:
        """A long lease (one is live at a time: a repeat returns it), or a 50 ms one left to expire."""
        k = self.rng.randint(1, 4)
        short = not self.model.leases and self.rng.random() < 0.4
        result = proc.call("flushPending", {"max": k, "leaseMs": 50 if short else 600_000})
        if result is None:  # a lease it may have made is released by the check at the next restart
            self.log("lease unanswered")
            return False
        ids = [item["id"] for item in result["items"]]
        if self.model.leases and result["flushId"] not in self.model.leases:
            raise Divergence(
                f"a lease while {sorted(self.model.leases)} is live gave another: {result['flushId']}"
            )
        if short:
            time.sleep(0.08)
            if proc.call("status", {}) is None:
                return False
            self.log(f"lease {k} for 50 ms -> {len(ids)}, expired")
        elif ids:
            self.model.leases[result["flushId"]] = ids
            self.log(f"lease {k} -> {len(ids)}")
        return True

    def end_lease(self, proc: Process) -> bool:
        flush_id = self.rng.choice(sorted(self.model.leases))
        ids = self.model.leases.pop(flush_id)
        method = self.rng.choice(["ackFlush", "releaseFlush"])
        result = proc.call(method, {"flushId": flush_id})
        if result is None:
            if method == "ackFlush":
                self.model.maybe_removed |= set(ids)
            self.log(f"{method} unanswered")
            return False
        if method == "ackFlush":
            self.take_out(ids)
        self.log(f"{method} {len(ids)}")
        return True

    def take_out(self, ids: list[str]) -> None:
        unknown = [i for i in ids if i not in self.model.held]
        if unknown:
            raise Divergence(f"handed out ids the model does not hold: {unknown[:5]}")
        gone = set(ids)
        self.model.held = [i for i in self.model.held if i not in gone]
        self.model.removed |= gone

    def check(self, store: Path) -> None:
        """Restarts on the store and compares every id it holds with the model."""
        self.stats.restarts += 1
        time.sleep(0.06)  # 50 ms leases have expired
        proc = Process(self.binary, store, [], self.env)
        try:
            # Every held item, handed out by one lease. A live lease (known or from an unanswered
            # request) is answered instead, so release what came and ask again until it is all.
            found: list[str] = []
            for _ in range(3):
                result = proc.call("flushPending", {"max": 1_000_000, "leaseMs": 600_000})
                status = proc.call("status", {})
                if result is None or status is None:
                    raise Divergence("the store did not open after the restart")
                found = [item["id"] for item in result["items"]]
                if result["items"]:
                    proc.call("releaseFlush", {"flushId": result["flushId"]})
                if len(found) == status["pending"]["total"]:
                    break
            else:
                raise Divergence(
                    f"status counts {status['pending']['total']} held; a lease hands out {len(found)}"
                )
            proc.end("eof")
        finally:
            if proc.proc.poll() is None:
                proc.proc.kill()
        m = self.model
        missing = [i for i in m.held if i not in found and i not in m.maybe_removed]
        back = [i for i in found if i in m.removed]
        extra = [i for i in found if i not in m.held and i not in m.removed]
        if missing:
            raise Divergence(f"{len(missing)} acknowledged items lost: {missing[:5]}")
        if back:
            raise Divergence(f"{len(back)} removed items came back: {back[:5]}")
        if len(extra) > m.unknown_saves:
            raise Divergence(
                f"{len(extra)} items no acknowledged save made (allowance {m.unknown_saves}): {extra[:5]}"
            )
        self.log(f"restart: {len(found)} held, as the model says")
        order = {i: n for n, i in enumerate(found)}
        m.held = sorted(found, key=order.__getitem__)
        m.leases = {}  # released by the check
        m.removed |= m.maybe_removed - set(found)
        m.maybe_removed = set()
        m.unknown_saves = 0


def campaign(
    binary: str, seconds: float, seed: int, verbose: bool = False
) -> tuple[Stats, str | None]:
    """Runs seeds from `seed` until `seconds` pass; returns the stats and the first divergence."""
    stats = Stats()
    deadline = time.monotonic() + seconds
    current = seed
    while time.monotonic() < deadline:
        stats.runs += 1
        try:
            Session(binary, current, stats, verbose).run(
                processes=random.Random(current).randint(3, 6)
            )
        except Divergence as error:
            return stats, str(error)
        current += 1
    return stats, None
