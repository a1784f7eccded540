"""A model checker over the real binary (issue 15): seeded random sessions on one store directory,
each a sequence of real processes, compared after every restart with a plain model built only from
the replies seen (and, for delivery, from what a local Braze stub answered).

Operations, in server processes: saves of the three kinds, `importLegacy` (valid and refused
elements, with and without a user), partial and full drains (`flushPending {max}`), leases that are
acked, released or left to expire, `deliverPending {max?}` against a stub on 127.0.0.1 that answers
at random (2xx, 2xx with per-object `errors`, 2xx cut off mid-body, 500, 429 with `Retry-After`, a
dropped connection, and 400 for any body holding a poison object, which delivery splits down to
it), `listDeadLetters {max?}`, `requeueDeadLetters {ids?}`, `dropDeadLetters {ids}`, and pauses
across snapshot intervals. Between server processes: `push-outbox flush [--max N] [--lease MS]`
and `push-outbox deliver`, each its own process on the same store; a lease `flush --lease` printed
may be acked or released by the next server process. Every process gets a random `--fsync` policy
(the one-shots their default) and may kill itself at one of the store's named points
(`PUSH_OUTBOX_KILL_AT`); servers also end by stdin EOF, SIGTERM or kill -9.

The model holds each item as pending (or leased), dead, or gone. Requests are sent one at a time,
so at most one is unanswered when a process dies; its effect is uncertain and the model allows
exactly the states it could leave each touched item in. For delivery the unanswered request is
the pass (or the `deliver` process): with `--braze-max-in-flight 1` each Braze request's answer is
committed before the next request is sent, so only the last request the stub saw is uncertain;
with more in flight, every request of the unanswered pass is.

Rules checked after each restart, on every id the store holds (a lease hands out every pending
one, `listDeadLetters` every dead one): an acknowledged save, import, requeue or undelivered item
is pending; an acknowledged dead letter (Braze's `errors`, a 400 split down to one object,
`no_identifier`) is dead; an item whose removal (drain, ack, drop, or a 2xx from the stub in an
answered pass) was acknowledged is never held again; nothing is held that no save created.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

KILL_POINTS = [
    "barrier",
    "temp",
    "renamed",
    "checkpoint",
    "rewrite",
    "deletion",
    "deletionSynced",
    "compacted",
    "rotation",
]
API_KEY = "model-key-3b7e1f"
# User attribute fields: an import uses each at most once, so no value supersedes another.
USER_FIELDS = ["first_name", "last_name", "home_city"]
PENDING, DEAD, GONE = "pending", "dead", "gone"

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "delivery"))
braze_stub: Any = importlib.import_module("braze_stub")  # Tests/delivery's stub, reused as is


class Divergence(AssertionError):
    pass


@dataclass
class Stats:
    runs: int = 0
    operations: int = 0
    restarts: int = 0
    kills: int = 0
    kill_points: Dict[str, int] = field(default_factory=dict)
    ops: Dict[str, int] = field(default_factory=dict)  # operations by kind
    answers: Dict[str, int] = field(default_factory=dict)  # the stub's answers by kind

    def count(self, table: Dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


@dataclass
class Model:
    held: List[str] = field(default_factory=list)  # pending (or leased) items, certainly
    dead: Set[str] = field(default_factory=set)  # dead letters, certainly
    removed: Set[str] = field(default_factory=set)  # removal acknowledged: must never come back
    leases: Dict[str, List[str]] = field(default_factory=dict)  # live long leases (durable)
    # Items an unanswered request touched: the states it can have left each in.
    maybe: Dict[str, Set[str]] = field(default_factory=dict)
    # A pass dead-lettered n items with no user: exactly n of these ids are dead.
    dead_counts: List[Tuple[Set[str], int]] = field(default_factory=list)
    unknown_saves: int = 0  # unanswered saves and imports: that many unseen ids may appear


class Braze:
    """Tests/delivery's stub on 127.0.0.1, answering every request at random (seeded)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        # (body, Reply, kind), found by identity of the body
        self.answers: List[Tuple[Any, Any, str]] = []
        self.kinds: Dict[str, int] = {}  # how many of each answer
        self.stall = False  # answers wait a little (the process is ended meanwhile)
        self.stub: Any = braze_stub.BrazeStub()
        self.stub.responder = self.respond
        self.stub.server.handle_error = lambda *args: None  # a client killed mid-answer is expected
        self.stub.start()

    @property
    def url(self) -> str:
        return str(self.stub.url)

    def stop(self) -> None:
        self.stub.stop()

    def mark(self) -> int:
        with self.stub.lock:
            return len(self.stub.requests)

    def since(self, mark: int) -> List[Any]:
        with self.stub.lock:
            return list(self.stub.requests[mark:])

    def respond(self, body: Any) -> Any:
        Reply = braze_stub.Reply
        events = (body or {}).get("events", [])
        attributes = (body or {}).get("attributes", [])
        roll = self.rng.random()
        if any(str(e.get("name", "")).startswith("bad") for e in events):
            reply, kind = Reply(status=400, body={"message": "poison object"}), "400"
        elif roll < 0.55:
            reply, kind = Reply(status=201), "2xx"
        elif roll < 0.67 and events + attributes:
            arrays = [("events", len(events)), ("attributes", len(attributes))]
            errors = [
                {"type": "refused by the stub", "input_array": name, "index": i}
                for name, n in arrays
                for i in range(n)
                if self.rng.random() < 0.3
            ]
            reply, kind = Reply(status=201, body={"message": "success", "errors": errors}), "errors"
        elif roll < 0.72:
            reply, kind = Reply(status=201, cut_body=True, pad_bytes=200), "2xx cut"
        elif roll < 0.84:
            reply, kind = Reply(status=500, body={"message": "oops"}), "500"
        elif roll < 0.94:
            retry = "0" if self.rng.random() < 0.8 else "1"
            reply, kind = Reply(status=429, headers={"Retry-After": retry}), "429"
        else:
            reply, kind = Reply(close_halfway=True), "dropped"
        if self.stall:
            reply.stall = self.rng.uniform(0.02, 0.25)
        with self.lock:
            self.answers.append((body, reply, kind))
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return reply

    def reply_to(self, body: Any) -> Any:
        with self.lock:
            for seen, reply, _ in self.answers:
                if seen is body:
                    return reply
        return None

    def describe(self, record: Any) -> str:
        """Which request this was (its index among all the stub saw) and what it was answered."""
        with self.lock:
            kind = next((k for seen, _, k in self.answers if seen is record.body), "?")
        with self.stub.lock:
            index = next((n for n, r in enumerate(self.stub.requests) if r is record), -1)
        return f"stub request #{index} ({kind}, status {record.status})"


class Process:
    """The binary on the store, one request at a time, replies read by a thread."""

    def __init__(self, binary: str, store: Path, args: List[str], env: Dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [binary, "--store", str(store), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.replies: Dict[int, Dict[str, Any]] = {}
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

    def send(self, method: str, params: Dict[str, Any]) -> bool:
        """Writes one request; False when the process is gone."""
        self.next_id += 1
        line = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )
        try:
            assert self.proc.stdin
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def result(self, method: str, timeout: float = 60) -> Optional[Dict[str, Any]]:
        """The last request's result, or None when the process ended without answering it."""
        with self.cond:
            self.cond.wait_for(lambda: self.next_id in self.replies or self.eof, timeout=timeout)
            reply = self.replies.get(self.next_id)
        if reply is None:
            if not self.eof:
                raise Divergence(
                    f"no reply to {method} within {timeout} s and the process is alive"
                )
            return None
        if "error" in reply:
            raise Divergence(f"{method} answered an error: {reply['error']}")
        result: Dict[str, Any] = reply["result"]
        return result

    def call(self, method: str, params: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The reply's result, or None when the process died first."""
        if not self.send(method, params):
            return None
        return self.result(method)

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


def signature(item: Dict[str, Any]) -> Tuple[str, str]:
    """What identifies an item's content, in the items format (every save's content is unique)."""
    if item["kind"] == "customEvent":
        return ("event", str(item["name"]))
    if item["kind"] == "customAttribute":
        return ("attribute", str(item["key"]))
    return ("user", str(item["value"]))


def object_signature(array: str, obj: Dict[str, Any]) -> Tuple[str, str]:
    """The same for one object of a /users/track body."""
    if array == "events":
        return ("event", str(obj["name"]))
    [key] = [k for k in obj if k != "external_id"]
    return ("user", str(obj[key])) if key in USER_FIELDS else ("attribute", key)


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
        self.history: List[str] = []
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))
        }
        self.env["BRAZE_API_KEY"] = API_KEY
        self.ids: Dict[Tuple[str, str], str] = {}  # content signature -> item id
        self.no_user: Set[str] = set()  # items saved without a user (never sent: no_identifier)
        self.removed_at: Dict[str, float] = {}  # when the model learnt of a removal (monotonic)
        self.removed_by: Dict[str, str] = {}  # the stub request whose 2xx removed an item
        self.braze: Optional[Braze] = None
        self.in_flight = 1
        self.background = False  # this server process runs with --deliver
        self.side_rng = random.Random(seed * 7919 + 1)  # picks --deliver; the main draws stay put
        self.processes: List[Process] = []  # killed when the run ends, so none outlives its store

    def spawn(self, store: Path, args: List[str], env: Dict[str, str]) -> Process:
        proc = Process(self.binary, store, args, env)
        self.processes.append(proc)
        return proc

    def log(self, text: str) -> None:
        self.history.append(text)
        if self.verbose:
            print(f"  seed {self.seed}: {text}", flush=True)

    def op(self, kind: str) -> None:
        self.stats.operations += 1
        self.stats.count(self.stats.ops, kind)

    def run(self, processes: int) -> None:
        root = Path(tempfile.mkdtemp(prefix="push-outbox-model-"))
        self.braze = Braze(self.seed)
        try:
            store = root / "store"
            force_server = False
            for n in range(processes):
                roll = self.rng.random()
                last = n == processes - 1
                if force_server or n == 0 or roll < 0.6:
                    force_server = False
                    self.one_process(store)
                elif roll < 0.72:
                    self.flush_command(store, lease=False)
                elif roll < 0.84:
                    if (
                        self.flush_command(store, lease=True)
                        and not last
                        and self.rng.random() < 0.7
                    ):
                        force_server = True  # the next server process may ack or release it
                        continue
                else:
                    self.deliver_command(store)
                self.check(store)
        except Divergence as error:
            tail = "\n    ".join(self.history[-30:])
            raise Divergence(
                f"seed {self.seed}, step {len(self.history)}: {error}\n  last steps:\n    {tail}"
            ) from None
        finally:
            for proc in self.processes:  # a divergence can leave one running
                if proc.proc.poll() is None:
                    proc.proc.kill()
                    proc.proc.wait(timeout=60)
            self.braze.stop()
            for kind, n in self.braze.kinds.items():
                self.stats.answers[kind] = self.stats.answers.get(kind, 0) + n
            shutil.rmtree(root, ignore_errors=True)

    # -- the model's bookkeeping

    def state(self, item: str) -> str:
        if item in self.model.dead:
            return DEAD
        if item in self.model.held:
            return PENDING
        return GONE

    def set_state(self, items: List[str], new: str) -> None:
        m = self.model
        for item in items:
            self.removed_by.pop(item, None)
            if item in m.dead:
                m.dead.discard(item)
            elif item in m.held:
                m.held.remove(item)
            if new == PENDING:
                m.held.append(item)
            elif new == DEAD:
                m.dead.add(item)
            else:
                m.removed.add(item)
                self.removed_at.setdefault(item, time.monotonic())

    def uncertain(self, items: List[str], also: str) -> None:
        """An unanswered request may have moved these items to `also` (or left them)."""
        m = self.model
        for item in items:
            allowed = m.maybe.pop(item, None) or {self.state(item)}
            self.set_state([item], GONE)
            m.removed.discard(item)
            m.maybe[item] = allowed | {also}

    def available(self) -> List[str]:
        leased = {i for ids in self.model.leases.values() for i in ids}
        return [i for i in self.model.held if i not in leased]

    def take_out(self, ids: List[str]) -> None:
        unknown = [i for i in ids if i not in self.model.held]
        if unknown:
            raise Divergence(f"handed out ids the model does not hold: {unknown[:5]}")
        self.set_state(ids, GONE)

    def register(self, item_id: str, sig: Tuple[str, str], user: bool) -> None:
        self.ids[sig] = item_id
        if not user:
            self.no_user.add(item_id)

    # -- server processes

    def one_process(self, store: Path) -> None:
        rng = self.rng
        fsync = rng.choice(["always", "everysec", "never"])
        interval = rng.choice(["0.05", "0.1", "0.2", "0.3"])
        self.in_flight = rng.choice([1, 1, 2])
        env = dict(self.env)
        point = self.kill_point(env)
        assert self.braze
        self.background = self.side_rng.random() < 0.2
        if self.background:
            # One request in flight, set before the flags are built: settle_background treats every
            # request but the last as answered and committed, which only one in flight guarantees.
            self.in_flight = 1
            self.stats.count(self.stats.ops, "server --deliver (process)")
        args = ["--fsync", fsync, "--snapshot-interval", interval, *self.delivery_flags()]
        args += ["--deliver"] if self.background else []
        args += self.image_flag()
        shown = args[args.index("--braze-max-in-flight") :]  # what the binary really gets
        self.log(
            f"start --fsync {fsync} --snapshot-interval {interval} {' '.join(shown)}"
            + (f" KILL_AT={point}" if point else "")
        )
        mark = self.braze.mark()
        proc = self.spawn(store, args, env)
        try:
            self.serve(proc, point)
        finally:
            if self.background:
                self.settle_background(mark)
                self.background = False

    def serve(self, proc: Process, point: Optional[str]) -> None:
        rng = self.rng
        for _ in range(rng.randint(5, 40)):
            if not self.operation(proc):
                self.log("the process died (kill point)")
                self.count_kill(point)
                proc.end("eof")
                return
        how = rng.choice(["eof", "eof", "term", "kill"] + ([] if self.background else ["pass"]))
        if how == "pass":  # ended by kill -9 or SIGTERM while a deliverPending pass runs
            how = rng.choice(["kill", "term"])
            self.log(f"end by {how} during deliverPending")
            self.stats.kills += how == "kill"
            self.deliver(proc, interrupt=how)
            return
        self.log(f"end by {how}")
        if how == "kill":
            self.stats.kills += 1
        proc.end(how)

    def delivery_flags(self) -> List[str]:
        assert self.braze
        return [
            "--braze-endpoint",
            self.braze.url,
            "--braze-backoff-ms",
            "1",
            "--braze-max-in-flight",
            str(self.in_flight),
        ]

    def kill_point(self, env: Dict[str, str], chance: float = 0.35) -> Optional[str]:
        if self.rng.random() >= chance:
            return None
        point = f"{self.rng.choice(KILL_POINTS)}:{self.rng.randint(1, 3)}"
        env["PUSH_OUTBOX_KILL_AT"] = point
        return point

    def count_kill(self, point: Optional[str]) -> None:
        self.stats.kills += 1
        if point:
            name = point.split(":")[0]
            self.stats.kill_points[name] = self.stats.kill_points.get(name, 0) + 1

    def operation(self, proc: Process) -> bool:
        """One random operation; False when the process died before answering."""
        rng = self.rng
        roll = rng.random()
        if self.background:  # only what background delivery cannot make ambiguous
            roll = roll / 0.7 * 0.52 if roll < 0.7 else 0.95
        if roll < 0.36:
            return self.save(proc)
        if roll < 0.42:
            return self.import_legacy(proc)
        if roll < 0.52:
            return self.drain(proc, rng.randint(1, 4) if rng.random() < 0.8 else 1_000_000)
        if roll < 0.60:
            return self.lease(proc)
        if roll < 0.66 and self.model.leases:
            return self.end_lease(proc)
        if roll < 0.78:
            return self.deliver(proc)
        if roll < 0.82:
            return self.list_dead(proc, rng.choice([None, None, rng.randint(1, 3)]))
        if roll < 0.87:
            return self.requeue(proc)
        if roll < 0.92:
            return self.drop(proc)
        self.op("pause")
        pause = rng.uniform(0.05, 0.35)
        self.log(f"pause {pause:.2f}")
        time.sleep(pause)
        return proc.proc.poll() is None

    def save(self, proc: Process) -> bool:
        self.op("save")
        self.counter += 1
        n = f"{self.seed}-{self.counter}"
        kind = self.rng.choice(["saveCustomEvent", "saveCustomAttribute", "saveUserAttribute"])
        user = {"externalId": f"u{n}"}
        name = f"bad{n}" if self.rng.random() < 0.05 else f"e{n}"  # Braze answers 400 for "bad"
        field_name = self.rng.choice(USER_FIELDS)
        params: Dict[str, Any] = {
            "saveCustomEvent": {"name": name, "user": user},
            "saveCustomAttribute": {"key": f"k{n}", "value": n, "user": user},
            "saveUserAttribute": {"field": field_name, "value": f"n{n}", "user": user},
        }[kind]
        sig = {
            "saveCustomEvent": ("event", name),
            "saveCustomAttribute": ("attribute", f"k{n}"),
            "saveUserAttribute": ("user", f"n{n}"),
        }[kind]
        if self.rng.random() < 0.1:
            params.pop("user")
        result = proc.call(kind, params)
        if result is None:
            self.model.unknown_saves += 1
            self.log(f"{kind} unanswered")
            return False
        self.model.held.append(result["id"])
        self.register(result["id"], sig, "user" in params)
        self.log(f"{kind} -> {result['id']}")
        return True

    def import_legacy(self, proc: Process) -> bool:
        """The guide's three lists, some elements refused; each id the reply names is held."""
        self.op("importLegacy")
        self.counter += 1
        n = f"{self.seed}-{self.counter}"
        rng = self.rng
        lists: Dict[str, Any] = {}
        expected: List[Tuple[str, int, List[Tuple[str, str]]]] = []  # list, index, signatures
        events: List[Any] = []
        for j in range(rng.randint(0, 3)):
            if rng.random() < 0.2:
                events.append({"score": j})  # no event name: refused
                expected.append(("pending_custom_events", j, []))
            else:
                key = "event_name" if rng.random() < 0.7 else "Event Name"
                events.append({key: f"i{n}-{j}", "step": j})
                expected.append(("pending_custom_events", j, [("event", f"i{n}-{j}")]))
        attributes: List[Any] = []
        for j in range(rng.randint(0, 3)):
            if rng.random() < 0.2:
                attributes.append({})  # empty: refused
                expected.append(("pending_custom_attributes", j, []))
            else:
                keys = [f"ik{n}-{j}-{k}" for k in range(rng.choice([1, 1, 2]))]
                attributes.append({key: j for key in keys})
                expected.append(("pending_custom_attributes", j, [("attribute", k) for k in keys]))
        users: List[Any] = []
        for j, field_name in enumerate(rng.sample(USER_FIELDS, rng.randint(0, 3))):
            users.append({field_name: f"iv{n}-{j}"})
            expected.append(("pending_user_attributes", j, [("user", f"iv{n}-{j}")]))
        for name, values in (
            ("pending_custom_events", events),
            ("pending_custom_attributes", attributes),
            ("pending_user_attributes", users),
        ):
            if values or rng.random() < 0.3:
                lists[name] = values
        with_user = rng.random() < 0.85
        if with_user:
            lists["user"] = {"externalId": f"imp{n}"}
        valid = sum(len(sigs) for _, _, sigs in expected)
        result = proc.call("importLegacy", lists)
        if result is None:
            self.model.unknown_saves += valid
            self.log(f"importLegacy of {valid} unanswered")
            return False
        outcomes = {(r["list"], r["index"]): r for r in result["results"]}
        if len(outcomes) != len(expected):
            raise Divergence(f"importLegacy answered {len(outcomes)} results for {len(expected)}")
        saved = 0
        for name, index, sigs in expected:
            outcome = outcomes[(name, index)]
            ids = outcome.get("ids")
            if not sigs:
                if ids is not None or "error" not in outcome:
                    raise Divergence(f"importLegacy saved a refused element: {outcome}")
                continue
            if ids is None or len(ids) != len(sigs):
                raise Divergence(f"importLegacy refused a valid element: {outcome}")
            for item_id, sig in zip(ids, sigs):
                self.model.held.append(item_id)
                self.register(item_id, sig, with_user)
            saved += 1
        refused = len(expected) - saved
        if (result["saved"], result["failed"]) != (saved, refused):
            raise Divergence(
                f"importLegacy says {result['saved']} saved and {result['failed']}"
                f" refused; its results say {saved} and {refused}"
            )
        self.log(f"importLegacy -> {saved} elements saved, {refused} refused")
        return True

    def drain(self, proc: Process, k: int) -> bool:
        self.op("drain")
        candidates = self.available()  # a 50 ms lease may hide some: any available item could go
        result = proc.call("flushPending", {"max": k})
        if result is None:
            self.uncertain(candidates, GONE)
            self.log(f"drain {k} unanswered")
            return False
        ids = [item["id"] for item in result["items"]]
        self.take_out(ids)
        self.log(f"drain {k} -> {len(ids)}")
        return True

    def lease(self, proc: Process) -> bool:
        """A long lease (one is live at a time: a repeat returns it), or a 50 ms one left to expire."""
        self.op("lease")
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
        if self.model.leases and sorted(ids) != sorted(self.model.leases[result["flushId"]]):
            raise Divergence(f"a repeated lease handed out other items: {ids[:5]}")
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
        self.op("ackFlush/releaseFlush")
        flush_id = self.rng.choice(sorted(self.model.leases))
        ids = self.model.leases.pop(flush_id)
        method = self.rng.choice(["ackFlush", "releaseFlush"])
        result = proc.call(method, {"flushId": flush_id})
        if result is None:
            if method == "ackFlush":
                self.uncertain(ids, GONE)
            self.log(f"{method} unanswered")
            return False
        count = result["acked" if method == "ackFlush" else "released"]
        if count != len(ids):
            raise Divergence(f"{method} of a lease of {len(ids)} answered {count}")
        if method == "ackFlush":
            self.take_out(ids)
        self.log(f"{method} {len(ids)}")
        return True

    def deliver(self, proc: Process, interrupt: Optional[str] = None) -> bool:
        """One `deliverPending` pass against the stub; its effects read from what the stub answered.
        With `interrupt` ("kill" or "term"), the stub stalls its answers and the process is ended
        while the pass runs."""
        self.op("deliverPending" + (f" ({interrupt} mid-pass)" if interrupt else ""))
        assert self.braze
        mark = self.braze.mark()
        candidates = [i for i in self.available() if i in self.no_user]
        params: Dict[str, Any] = {} if self.rng.random() < 0.7 else {"max": self.rng.randint(1, 5)}
        if not proc.send("deliverPending", params):
            result = None
        elif interrupt:
            self.braze.stall = True
            time.sleep(self.rng.uniform(0, 0.3))
            proc.end(interrupt)
            self.braze.stall = False
            with proc.cond:
                reply = proc.replies.get(proc.next_id)
            result = reply.get("result") if reply else None
        else:
            result = proc.result("deliverPending")
        requests = self.braze.since(mark)
        if result is None or interrupt == "term":
            # SIGTERM abandons the pass (and may answer it): what was in flight is uncertain, and
            # the reply counts at least the certain deliveries, at most every possible one.
            low, high = self.settle_unanswered(requests, candidates)
            if result is not None and not low <= result["delivered"] <= high:
                raise Divergence(
                    f"deliverPending cut by SIGTERM says delivered"
                    f" {result['delivered']}; the stub's answers allow {low} to {high}"
                )
            self.log(
                f"deliverPending {params} {'cut by SIGTERM' if result else 'unanswered'}"
                f" after {len(requests)} requests"
            )
            return False
        delivered, dead = self.settle(requests)
        if result["delivered"] != delivered:
            raise Divergence(
                f"deliverPending says delivered {result['delivered']}; the stub accepted {delivered}"
            )
        no_identifier = result["deadLettered"] - dead
        if not 0 <= no_identifier <= len(candidates):
            raise Divergence(
                f"deliverPending dead-lettered {result['deadLettered']}: the stub refused {dead},"
                f" {len(candidates)} items have no user"
            )
        self.log(
            f"deliverPending {params} -> {len(requests)} requests, delivered {delivered},"
            f" dead {dead} + {no_identifier} no_identifier"
        )
        if no_identifier:
            self.model.dead_counts.append((set(candidates), no_identifier))
            for item in candidates:
                self.uncertain([item], DEAD)
            if interrupt:
                return False
            return self.list_dead(proc, None)  # which ones: the constraint is checked there
        return not interrupt

    def outcomes(self, record: Any) -> List[Tuple[str, str]]:
        """Each item a stub request carried, with what its answer makes of it."""
        assert self.braze
        body = record.body or {}
        reply = self.braze.reply_to(record.body)
        objects = [("events", i, o) for i, o in enumerate(body.get("events", []))]
        objects += [("attributes", i, o) for i, o in enumerate(body.get("attributes", []))]
        named = set()
        if reply is not None and isinstance(reply.body, dict):
            named = {(e["input_array"], e["index"]) for e in reply.body.get("errors", [])}
        out = []
        for array, index, obj in objects:
            sig = object_signature(array, obj)
            item = self.ids.get(sig)
            if item is None:
                raise Divergence(f"the stub got an object no save made: {obj}")
            status = record.status
            if status is None:
                new = PENDING
            elif 200 <= status < 300:
                new = DEAD if (array, index) in named else GONE
            elif status in (400, 413, 422) and len(objects) == 1:
                new = DEAD
            else:
                new = PENDING
            out.append((item, new))
        return out

    def sent_check(self, item: str, at: float) -> None:
        """An item a request carried, which arrived at the stub at `at` (monotonic)."""
        m = self.model
        leased = {i for ids in m.leases.values() for i in ids}
        if item in m.removed:
            if self.removed_at.get(item, 0.0) < at:
                raise Divergence(f"{item} was sent to Braze after its removal was acknowledged")
            return  # background delivery failed to send it, then a drain took it
        if item in m.dead:
            raise Divergence(f"dead letter {item} was sent to Braze")
        if item in leased:
            raise Divergence(f"{item} was sent to Braze while a flush lease held it")
        if item not in m.held and item not in m.maybe:
            raise Divergence(f"{item} was sent to Braze and the model does not hold it")

    def settle(self, requests: List[Any]) -> Tuple[int, int]:
        """Applies answered requests: 2xx delivers, a named or isolated object is dead."""
        assert self.braze
        delivered = dead = 0
        for record in requests:
            for item, new in self.outcomes(record):
                self.sent_check(item, record.at)
                if new != PENDING:
                    # A request carried the item, so it was pending when sent, and this answer was
                    # applied: delivered or dead for certain, whatever an unanswered drain allowed.
                    self.model.maybe.pop(item, None)
                    self.set_state([item], new)
                    delivered += new == GONE
                    dead += new == DEAD
                if new == GONE:
                    self.removed_by[item] = (
                        f"{self.braze.describe(record)}, settled as answered with"
                        f" --braze-max-in-flight {self.in_flight}"
                    )
        return delivered, dead

    def settle_unanswered(self, requests: List[Any], candidates: List[str]) -> Tuple[int, int]:
        """A pass that never answered: with one request in flight, each answer was committed before
        the next request left, so only the last request's outcome is uncertain; else every one.
        Returns the fewest and the most items it can have delivered."""
        certain = requests[:-1] if self.in_flight == 1 else []
        low, _ = self.settle(certain)
        high = low
        for record in requests[len(certain) :]:
            for item, new in self.outcomes(record):
                self.sent_check(item, record.at)
                if new != PENDING:
                    self.uncertain([item], new)
                    high += new == GONE
        pending = [i for i in candidates if PENDING in self.model.maybe.get(i, {self.state(i)})]
        self.uncertain(pending, DEAD)
        return low, high

    def settle_background(self, mark: int) -> None:
        """After a server process with --deliver: every request the stub saw is settled as for a
        pass that never answered (there is no reply to a background request); which items without
        a user a background scan reached is unknown, so each may be dead."""
        assert self.braze
        requests = self.braze.since(mark)
        # Also the items an unanswered drain may have left pending: a scan can have reached them first.
        maybe_pending = [i for i, states in self.model.maybe.items() if PENDING in states]
        candidates = [i for i in self.available() + maybe_pending if i in self.no_user]
        self.settle_unanswered(requests, candidates)
        self.log(f"background delivery sent {len(requests)} requests")

    def list_dead(self, proc: Process, k: Optional[int]) -> bool:
        self.op("listDeadLetters")
        m = self.model
        result = proc.call("listDeadLetters", {} if k is None else {"max": k})
        if result is None:
            self.log("listDeadLetters unanswered")
            return False
        ids = [d["item"]["id"] for d in result["deadLetters"]]
        possible = {i for i, states in m.maybe.items() if DEAD in states}
        if result["total"] < len(m.dead) or len(ids) != min(k or len(ids), result["total"]):
            raise Divergence(f"listDeadLetters {k}: total {result['total']}, listed {len(ids)}")
        if k is None:
            self.resolve_dead(set(ids), possible)
        elif not set(ids) <= m.dead | possible:
            raise Divergence(f"listDeadLetters names items that are not dead: {ids[:5]}")
        self.log(f"listDeadLetters {k} -> {len(ids)} of {result['total']}")
        return True

    def resolve_dead(self, found: Set[str], possible: Set[str]) -> None:
        """Every dead letter listed: settles the no_identifier ones a pass counted."""
        m = self.model
        missing = m.dead - found
        if missing:
            raise Divergence(f"dead letters lost: {sorted(missing)[:5]}")
        extra = found - m.dead - possible
        if extra:
            raise Divergence(f"dead letters the model does not have: {sorted(extra)[:5]}")
        for ids, n in m.dead_counts:
            if len(found & ids) != n:
                raise Divergence(
                    f"{len(found & ids)} of the {len(ids)} items without a user are dead letters;"
                    f" the pass said {n} became dead letters (no_identifier)"
                )
        m.dead_counts = []
        for item in list(m.maybe):
            if m.maybe[item] <= {PENDING, DEAD}:
                del m.maybe[item]
                self.set_state([item], DEAD if item in found else PENDING)

    def requeue(self, proc: Process) -> bool:
        self.op("requeueDeadLetters")
        m = self.model
        dead = sorted(m.dead)
        if self.rng.random() < 0.3:
            targets, params = dead, {}
        else:
            targets = self.rng.sample(dead, self.rng.randint(0, len(dead)))
            noise = self.rng.sample(self.available(), min(1, len(self.available())))
            params = {"ids": targets + noise + ["not-an-item"]}  # ignored
        result = proc.call("requeueDeadLetters", params)
        if result is None:
            self.uncertain(targets, PENDING)
            self.log(f"requeueDeadLetters {len(targets)} unanswered")
            return False
        if result["requeued"] != len(targets):
            raise Divergence(f"requeueDeadLetters of {len(targets)} answered {result['requeued']}")
        self.set_state(targets, PENDING)
        self.log(f"requeueDeadLetters {'all' if not params else ''} -> {len(targets)}")
        return True

    def drop(self, proc: Process) -> bool:
        self.op("dropDeadLetters")
        dead = sorted(self.model.dead)
        targets = self.rng.sample(dead, self.rng.randint(min(1, len(dead)), len(dead)))
        noise = self.rng.sample(self.available(), min(1, len(self.available())))
        result = proc.call("dropDeadLetters", {"ids": targets + noise})  # pending ids are ignored
        if result is None:
            self.uncertain(targets, GONE)
            self.log(f"dropDeadLetters {len(targets)} unanswered")
            return False
        if result["dropped"] != len(targets):
            raise Divergence(f"dropDeadLetters of {len(targets)} answered {result['dropped']}")
        self.set_state(targets, GONE)
        self.log(f"dropDeadLetters -> {len(targets)}")
        return True

    # -- one-shots between server processes

    def image_flag(self) -> List[str]:
        """Half the processes write `load.image` at a clean exit whatever the store's size, so the
        next start loads from it (the side generator: the main draws stay put)."""
        if self.side_rng.random() >= 0.5:
            return []
        self.stats.count(self.stats.ops, "--load-image-min-bytes 0 (process)")
        return ["--load-image-min-bytes", "0"]

    def one_shot(self, args: List[str], point_chance: float = 0.25) -> Tuple[Any, Optional[str]]:
        args = args + self.image_flag()
        env = dict(self.env)
        point = self.kill_point(env, point_chance)
        run = subprocess.run(
            [self.binary, *args],
            capture_output=True,
            env=env,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return run, point

    def flush_command(self, store: Path, lease: bool) -> bool:
        """`push-outbox flush [--max N] [--lease MS]`: each line written left the store (or is
        leased). True when it printed a live lease."""
        self.op("flush --lease" if lease else "flush")
        before = self.available()
        k = self.rng.choice([None, self.rng.randint(1, 5)])
        args = ["flush", "--store", str(store)] + (["--max", str(k)] if k else [])
        args += ["--lease", "600000"] if lease else []
        run, point = self.one_shot(args)
        lines = run.stdout.split(b"\n")[:-1]  # whole lines only
        ids = [json.loads(line)["id"] for line in lines]
        desc = " ".join(args[3:])
        if any(i not in before for i in ids):
            raise Divergence(f"flush {desc} wrote items the model does not hold available")
        if run.returncode != 0:
            if run.returncode != -signal.SIGKILL or not point:
                raise Divergence(f"flush {desc} exited {run.returncode}: {run.stderr[-300:]!r}")
            self.count_kill(point)
            if not lease:
                self.uncertain(ids, GONE)
            self.log(f"flush {desc} died at {point} after {len(ids)} lines")
            return False
        if len(ids) != min(k or len(before), len(before)):
            raise Divergence(f"flush {desc} wrote {len(ids)} of {len(before)} available")
        if not lease:
            self.take_out(ids)
            self.log(f"flush {desc} -> {len(ids)} lines, removed")
            return False
        match = re.search(rb"flushId (\S+) until", run.stderr)
        if ids and match is None:
            raise Divergence(f"flush {desc} printed no flushId: {run.stderr!r}")
        if ids and match:
            self.model.leases[match.group(1).decode()] = ids
        self.log(f"flush {desc} -> {len(ids)} lines, leased")
        return bool(ids)

    def deliver_command(self, store: Path) -> None:
        """`push-outbox deliver`: its summary acknowledges what the stub's answers did."""
        self.op("deliver (command)")
        assert self.braze
        self.in_flight = self.rng.choice([1, 1, 2])
        before = self.available()
        candidates = [i for i in before if i in self.no_user]
        mark = self.braze.mark()
        run, point = self.one_shot(["deliver", "--store", str(store), *self.delivery_flags()])
        requests = self.braze.since(mark)
        # (builds before issue 17 print "retrying R, remaining P" instead of "still pending P")
        summary = re.search(
            rb"delivered (\d+), dead-lettered (\d+), (?:still pending|retrying \d+, remaining) (\d+)",
            run.stderr,
        )
        if run.returncode not in (0, 1, 5, 6) or summary is None:
            if run.returncode != -signal.SIGKILL or not point:
                raise Divergence(f"deliver exited {run.returncode}: {run.stderr[-300:]!r}")
            self.count_kill(point)
            self.settle_unanswered(requests, candidates)
            self.log(f"deliver died at {point} after {len(requests)} requests")
            return
        delivered, dead = self.settle(requests)
        d, x, p = (int(g) for g in summary.groups())
        no_identifier = x - dead
        if d != delivered or not 0 <= no_identifier <= len(candidates) or d + x + p != len(before):
            raise Divergence(
                f"deliver says {summary.group(0).decode()} of {len(before)} pending; the stub"
                f" accepted {delivered} and refused {dead}; {len(candidates)} have no user"
            )
        # The exit code tells a cron job the outcome: 6 some still pending, 5 some dead-lettered, 0 all
        # delivered; 1 when Braze refused the endpoint or key.
        expected = 6 if p else 5 if x else 0
        if run.returncode != expected and not (run.returncode == 1 and b"stopped: Braze answered" in run.stderr):
            raise Divergence(f"deliver exited {run.returncode} after {summary.group(0).decode()}")
        if no_identifier:
            self.model.dead_counts.append((set(candidates), no_identifier))
            for item in candidates:
                self.uncertain([item], DEAD)
        self.log(f"deliver -> {len(requests)} requests: {summary.group(0).decode()}")

    # -- the check after each restart

    def check(self, store: Path) -> None:
        """Restarts on the store and compares every id it holds with the model; then restarts once
        more (the first check's requests change nothing) and wants exactly the same again, so a
        state that only a recovery's replay held and its next snapshot dropped is seen at once."""
        self.stats.restarts += 1
        time.sleep(0.06)  # 50 ms leases have expired
        self.in_flight = 1
        pending, dead = self.observe(store)
        self.compare(pending, dead)
        again = self.observe(store)
        if again != (pending, dead):
            changed = sorted(set(pending) ^ set(again[0]) | set(dead) ^ set(again[1]))
            raise Divergence(
                f"a second restart with nothing done in between changed the store:"
                f" {len(pending)} pending and {len(dead)} dead became {len(again[0])} and"
                f" {len(again[1])} ({changed[:5]})"
            )

    def observe(self, store: Path) -> Tuple[List[str], List[str]]:
        """The ids the store holds, pending (in seq order) and dead, from a fresh process."""
        proc = self.spawn(store, self.delivery_flags(), self.env)  # delivery leases end
        try:
            # Every held item, handed out by one lease. A live lease (known or from an unanswered
            # request) is answered instead, so release what came and ask again until it is all.
            found: List[Dict[str, Any]] = []
            status: Dict[str, Any] = {}
            for _ in range(3):
                result = proc.call("flushPending", {"max": 1_000_000, "leaseMs": 600_000})
                answer = proc.call("status", {})
                if result is None or answer is None:
                    raise Divergence("the store did not open after the restart")
                status = answer
                found = result["items"]
                if result["items"]:
                    proc.call("releaseFlush", {"flushId": result["flushId"]})
                if len(found) == status["pending"]["total"]:
                    break
            else:
                raise Divergence(
                    f"status counts {status['pending']['total']} held; a lease hands out {len(found)}"
                )
            listed = proc.call("listDeadLetters", {})
            if listed is None:
                raise Divergence("listDeadLetters unanswered after the restart")
            dead_items = [d["item"] for d in listed["deadLetters"]]
            if listed["total"] != len(dead_items) or status["deadLetters"] != len(dead_items):
                raise Divergence(
                    f"listDeadLetters {listed['total']}, status {status['deadLetters']}"
                )
            proc.end("eof")
        finally:
            if proc.proc.poll() is None:
                proc.proc.kill()
        for item in found + dead_items:  # saves never answered are learnt here
            self.register(item["id"], signature(item), "user" in item)
        return [i["id"] for i in found], [i["id"] for i in dead_items]

    def compare(self, pending: List[str], dead: List[str]) -> None:
        m = self.model
        actual = {i: PENDING for i in pending}
        actual.update({i: DEAD for i in dead})
        if len(actual) != len(pending) + len(dead):
            raise Divergence("an item is both pending and dead")
        lost = [i for i in m.held if actual.get(i) is None]
        if lost:
            raise Divergence(f"{len(lost)} acknowledged items lost: {lost[:5]}")
        wrong = [i for i in m.held if actual[i] != PENDING]
        if wrong:
            raise Divergence(f"{len(wrong)} pending items are dead letters: {wrong[:5]}")
        lost = [i for i in m.dead if actual.get(i) is None]
        if lost:
            raise Divergence(f"{len(lost)} dead letters lost: {lost[:5]}")
        wrong = [i for i in m.dead if actual[i] != DEAD]
        if wrong:
            raise Divergence(f"{len(wrong)} dead letters came back pending: {wrong[:5]}")
        for item, states in m.maybe.items():
            if actual.get(item, GONE) not in states:
                raise Divergence(
                    f"{item} is {actual.get(item, GONE)}; the unanswered request allows {sorted(states)}"
                )
        back = [i for i in actual if i in m.removed]
        if back:
            why = "".join(
                f"\n    {i}: {self.removed_by.get(i, 'not by delivery')}" for i in back[:5]
            )
            raise Divergence(f"{len(back)} removed items came back: {back[:5]}{why}")
        extra = [i for i in actual if i not in m.held and i not in m.dead and i not in m.maybe]
        if len(extra) > m.unknown_saves:
            raise Divergence(
                f"{len(extra)} items no acknowledged save made (allowance {m.unknown_saves}): {extra[:5]}"
            )
        found_dead = set(dead)
        for ids, n in m.dead_counts:
            if len(found_dead & ids) != n:
                raise Divergence(
                    f"{len(found_dead & ids)} of the {len(ids)} items without a user are dead letters;"
                    f" the pass said {n} became dead letters (no_identifier)"
                )
        self.log(f"restart: {len(pending)} pending, {len(dead)} dead, as the model says")
        for item in m.maybe:
            if item not in actual:
                m.removed.add(item)
                self.removed_at.setdefault(item, time.monotonic())
        m.held = list(pending)  # in seq order
        m.dead = found_dead
        m.leases = {}  # released by the check
        m.maybe = {}
        m.dead_counts = []
        m.unknown_saves = 0


def campaign(
    binary: str,
    seconds: float,
    seed: int,
    verbose: bool = False,
    cover: FrozenSet[str] = frozenset(),
    extra_seconds: float = 0.0,
) -> Tuple[Stats, Optional[str]]:
    """Runs seeds from `seed` until `seconds` pass; returns the stats and the first divergence.

    With `cover`, keeps running further seeds (at most `extra_seconds` more) while a kind of
    operation named there has not run yet: how many seeds fit in `seconds` depends on the machine's
    load, and a slow machine must still exercise every kind."""
    stats = Stats()
    deadline = time.monotonic() + seconds
    current = seed

    def go_on() -> bool:
        now = time.monotonic()
        return now < deadline or (bool(cover - set(stats.ops)) and now < deadline + extra_seconds)

    while go_on():
        stats.runs += 1
        try:
            Session(binary, current, stats, verbose).run(
                processes=random.Random(current).randint(3, 6)
            )
        except Divergence as error:
            return stats, str(error)
        current += 1
    return stats, None
