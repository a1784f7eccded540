"""A fake Braze /users/track on 127.0.0.1 with seeded faults, for the end-to-end delivery model.
Standard library only.

Every request is logged (arrival and answer times, the sending process when the model can name it,
headers, raw and parsed body, the answer) and what Braze "has" is derived from the log: a request
answered 2xx (or stalled past the client's timeout and then answered 2xx) is applied at its arrival,
object by object, minus the objects named in its `errors`. Attributes keep the LAST value applied
per user and key; events are the list received.

Faults, drawn per request from a seeded generator while `faults` is on:
- `429` with `Retry-After` 0 or 1;
- `5xx` (500 or 503);
- `reset`: the body is read, then the connection is reset (SO_LINGER 0), nothing applied;
- `stall`: Braze applies the body (`stall 2xx`) or not (`stall 5xx`), but answers only after the
  client's timeout (`timeout_s` + 0.3 s);
- `errors`: 201 with per-object `errors` naming some objects (they are not applied);
Whatever `faults` says, a body holding an event whose name starts with `poison` is answered 400
(unless a fault above was drawn first), so the service halves it until the poison is alone.
Otherwise: plain 201.

`plant(kind)` falsifies the log afterwards, so the model's checks can be shown to fail (red runs).
"""

from __future__ import annotations

import json
import random
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

# The fault kinds this fake can answer with, besides plain `201` and the poison's `400`.
FAULT_KINDS = ("429", "5xx", "reset", "stall 2xx", "stall 5xx", "errors")
PLANTS = ("drop", "phantom", "reorder", "duplicate", "overlap", "key", "malformed")


@dataclass
class Request:
    n: int  # its index in the log
    at: float  # time.monotonic() at arrival (the whole body read)
    method: str
    path: str
    headers: List[Tuple[str, str]]
    raw: bytes
    body: Any  # the parsed body (None when it is not JSON)
    owner: str = "?"  # the process that sent it, as the model names it ("?": not known)
    port: int = 0  # the client's port (one per connection)
    kind: str = ""  # 201, 400, 429, 5xx, reset, stall 2xx, stall 5xx, errors
    status: Optional[int] = None  # what was (or would have been) answered; None: reset
    answered: Optional[float] = None  # time.monotonic() just before the answer (or reset) left
    gone: Optional[float] = None  # when a stalled request's client closed the connection (gave up)
    applied: bool = False  # Braze applied it (2xx, minus `errors`)
    errors: Set[Tuple[str, int]] = field(default_factory=set)  # (input_array, index) refused

    def objects(self) -> List[Tuple[str, int, Dict[str, Any]]]:
        """(array, index, object) of every attribute and event object in the body."""
        body = self.body if isinstance(self.body, dict) else {}
        out: List[Tuple[str, int, Dict[str, Any]]] = []
        for array in ("attributes", "events"):
            values = body.get(array)
            if isinstance(values, list):
                out += [(array, i, o) for i, o in enumerate(values) if isinstance(o, dict)]
        return out

    def users(self) -> Set[str]:
        return {str(o.get("external_id")) for _, _, o in self.objects()}

    def accepted(self) -> List[Tuple[str, int, Dict[str, Any]]]:
        if not self.applied:
            return []
        return [(a, i, o) for a, i, o in self.objects() if (a, i) not in self.errors]


class FakeBraze:
    def __init__(
        self, seed: int, timeout_s: float, rates: Optional[Dict[str, float]] = None
    ) -> None:
        self.rng = random.Random(seed)
        self.timeout_s = timeout_s  # the client's --braze-timeout-ms, in seconds
        self.stall_s = timeout_s + 0.3
        self.rates = rates or {
            "429": 0.07,
            "5xx": 0.07,
            "reset": 0.05,
            "stall 2xx": 0.025,
            "stall 5xx": 0.02,
            "errors": 0.07,
        }
        self.faults = True
        self.log: List[Request] = []
        self.lock = threading.Lock()
        self.owner: Callable[[int], str] = lambda port: "?"
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            owner_name: Optional[str] = None

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._handle("GET")

            def do_PUT(self) -> None:
                self._handle("PUT")

            def do_POST(self) -> None:
                self._handle("POST")

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", "0") or "0")
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                if self.owner_name is None:  # one look-up per connection
                    self.owner_name = fake.owner(self.client_address[1])
                request = Request(
                    n=0,
                    at=time.monotonic(),
                    method=method,
                    path=self.path,
                    headers=list(self.headers.items()),
                    raw=raw,
                    body=body,
                    owner=self.owner_name,
                    port=self.client_address[1],
                )
                with fake.lock:
                    request.n = len(fake.log)
                    fake.log.append(request)
                    fake.decide(request)
                self._answer(request)

            def _stall(self, request: Request) -> bool:
                """Waits `stall_s`, watching for the client to close the connection (its timeout);
                True, with `request.gone` set, when it did."""
                end = time.monotonic() + fake.stall_s
                while True:
                    left = end - time.monotonic()
                    if left <= 0:
                        return False
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.01))
                    if readable:
                        try:
                            peek = self.connection.recv(1, socket.MSG_PEEK)
                        except OSError:
                            peek = b""
                        if not peek:
                            request.gone = time.monotonic()
                            return True
                        time.sleep(min(left, 0.01))  # a pipelined request: keep waiting

            def _answer(self, request: Request) -> None:
                if request.kind == "reset":
                    request.answered = time.monotonic()
                    self.connection.setsockopt(
                        socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                    )
                    self.close_connection = True
                    self.connection.close()
                    return
                if request.kind.startswith("stall") and self._stall(request):
                    self.close_connection = True  # the client gave up: nobody to answer
                    return
                headers: Dict[str, str] = {}
                payload: Dict[str, Any] = {"message": "success"}
                if request.kind == "429":
                    headers["Retry-After"] = "1" if request.n % 3 == 0 else "0"
                    payload = {"message": "rate limited"}
                elif request.status and request.status >= 500:
                    payload = {"message": "internal error"}
                elif request.status == 400:
                    payload = {"message": "poison object"}
                elif request.errors:
                    payload = {
                        "message": "success",
                        "errors": [
                            {"type": "refused by the fake", "input_array": a, "index": i}
                            for a, i in sorted(request.errors)
                        ],
                    }
                data = json.dumps(payload).encode()
                request.answered = time.monotonic()  # before it leaves: the client acts at once
                try:
                    assert request.status is not None
                    self.send_response(request.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:  # the client gave up (a stall) or was killed
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *args: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeBraze:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def decide(self, request: Request) -> None:
        """Draws the answer (under the lock, in arrival order: the same seed, the same draws)."""
        roll = self.rng.random()
        kind = "201"
        if self.faults:
            edge = 0.0
            for name, rate in self.rates.items():
                edge += rate
                if roll < edge:
                    kind = name
                    break
        objects = request.objects()
        poison = any(
            a == "events" and str(o.get("name", "")).startswith("poison") for a, _, o in objects
        )
        if kind in ("201", "errors", "stall 2xx") and poison:
            kind = "400"
        if kind == "errors":
            request.errors = {(a, i) for a, i, _ in objects if self.rng.random() < 0.3}
            if not request.errors:
                kind = "201"
        request.kind = kind
        request.status = {
            "201": 201,
            "errors": 201,
            "400": 400,
            "429": 429,
            "5xx": self.rng.choice([500, 503]),
            "reset": None,
            "stall 2xx": 201,
            "stall 5xx": 500,
        }[kind]
        request.applied = request.status is not None and 200 <= request.status < 300

    # -- what Braze has

    def snapshot(self) -> List[Request]:
        with self.lock:
            return list(self.log)

    def kinds(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for request in self.snapshot():
            out[request.kind] = out.get(request.kind, 0) + 1
        return out

    def plant(self, kind: str, rng: random.Random) -> str:
        """Falsifies the log in one way (a red run); returns what it did, or "" when it could not."""
        with self.lock:
            applied = [r for r in self.log if r.accepted()]
            if kind == "drop" and applied:
                r = rng.choice(applied)
                a, i, o = rng.choice(r.accepted())
                r.errors.add((a, i))  # no longer counted as received, and not a dead letter either
                return f"dropped {a}[{i}] {o} of request #{r.n} from the record"
            if kind == "phantom" and applied:
                r = rng.choice(applied)
                extra = {"external_id": "nobody", "name": "ghost", "time": "2026-01-01T00:00:00Z"}
                r.body = dict(r.body, events=list(r.body.get("events", [])) + [extra])
                return f"added an event nobody saved to request #{r.n}"
            if kind == "reorder":
                # Two applied requests holding events of one user, swapped in arrival order.
                def events_of(r: Request) -> Set[str]:
                    return {str(o.get("external_id")) for a, _, o in r.accepted() if a == "events"}

                for x in applied:
                    for y in applied:
                        if x.n < y.n and x.answered and y.answered and events_of(x) & events_of(y):
                            # Their whole times, so they swap places without overlapping.
                            x.at, y.at = y.at, x.at
                            x.answered, y.answered = y.answered, x.answered
                            self.log[x.n], self.log[y.n] = y, x
                            x.n, y.n = y.n, x.n
                            return f"swapped requests #{y.n} and #{x.n} in arrival order"
                return ""
            if kind == "duplicate" and applied:
                r = rng.choice(applied)
                copy = Request(**{**r.__dict__, "n": len(self.log), "errors": set(r.errors)})
                copy.at = self.log[-1].at + 0.001
                copy.answered = copy.at + 0.001
                self.log.append(copy)
                return f"recorded request #{r.n} twice"
            if kind == "overlap":
                for x in applied:
                    for y in applied:
                        if x.n + 1 == y.n and x.users() & y.users() and x.answered is not None:
                            x.answered = y.at + 0.01
                            return f"stretched request #{x.n} past #{y.n}'s arrival"
                return ""
            if kind == "key" and self.log:
                r = rng.choice(self.log)
                auth = next((v for k, v in r.headers if k.lower() == "authorization"), "")
                r.headers.append(("X-Debug", auth.removeprefix("Bearer ")))
                return f"copied the key into a header of request #{r.n}"
            if kind == "malformed" and applied:
                r = rng.choice(applied)
                events = list(r.body.get("events", []))
                r.body = dict(r.body, events=events + [dict(events[0] if events else {})] * 76)
                return f"gave request #{r.n} more than 75 events"
        return ""
