"""`--metrics-listen` and `--metrics-file` over the real binary (issue 19 item 4).

Each test drives the binary over JSON-RPC, keeps a plain model of what it did (saves per kind,
refusals, pending, dead letters), then scrapes `/metrics` (or reads the metrics file) and checks the
values against the model with `prometheus_client`'s parsers. Hostile HTTP must never stop the
server answering JSON-RPC. `promtool check metrics` lints the exposition where promtool exists.

Binary: $PUSH_OUTBOX_BIN, else .build/debug/push-outbox.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]
OPENMETRICS = "application/openmetrics-text"


def binary() -> str:
    path = os.environ.get("PUSH_OUTBOX_BIN") or str(REPO / ".build" / "debug" / "push-outbox")
    if not Path(path).exists():
        pytest.fail(f"no binary at {path}: run `swift build` or set PUSH_OUTBOX_BIN", pytrace=False)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Outbox:
    """One server process with a store and metrics on; requests one line at a time."""

    def __init__(self, store: Path, *flags: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary(), "--store", str(store), "--metrics-listen", f"127.0.0.1:{self.port}", *flags],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0
        # The listener is up once the first request is answered (it is bound before the store opens).
        self.call("status", {})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        line = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(line).encode() + b"\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        assert reply, f"no reply to {method}; stderr: {self.stderr()}"
        answer: dict[str, Any] = json.loads(reply)
        assert answer["id"] == self.next_id
        return answer

    def stop(self) -> int:
        assert self.proc.stdin
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        return code

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr
        return self.proc.stderr.read().decode(errors="replace")

    def url(self, path: str = "/metrics") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    box = Outbox(tmp_path / "store")
    yield box
    if box.proc.poll() is None:
        box.stop()


def scrape(box: Outbox, accept: str | None = None) -> tuple[str, str]:
    request = urllib.request.Request(box.url())
    if accept:
        request.add_header("Accept", accept)
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def samples(
    text: str, openmetrics: bool = False
) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    parse = openmetrics_families if openmetrics else text_string_to_metric_families
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in parse(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    key = (name, tuple(sorted(labels.items())))
    assert key in found, f"no sample {key}"
    return found[key]


def eventually(check: Any, seconds: float = 3.0) -> Any:
    """Retries `check` (an assertion) while the snapshot may still be on its way (published every 100 ms)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


USER = {"externalId": "u1"}


def drive(box: Outbox) -> dict[str, Any]:
    """Saves and refusals; returns the model of what the metrics must say."""
    model: dict[str, Any] = {
        "saves": {"customEvent": 0, "customAttribute": 0, "userAttribute": 0},
        "refused": {},
    }
    for n in range(5):
        assert "result" in box.call("saveCustomEvent", {"name": f"e{n}", "user": USER})
        model["saves"]["customEvent"] += 1
    for n in range(3):
        assert "result" in box.call(
            "saveCustomAttribute", {"key": "visits", "value": n, "op": "inc", "user": USER}
        )
        model["saves"]["customAttribute"] += 1
    assert "result" in box.call(
        "saveUserAttribute", {"field": "first_name", "value": "Ann", "user": USER, "id": "c1"}
    )
    model["saves"]["userAttribute"] += 1
    # A repeated client id is not a new save.
    assert box.call(
        "saveUserAttribute", {"field": "first_name", "value": "Ann", "user": USER, "id": "c1"}
    )["result"]["duplicate"]
    for _ in range(2):
        assert box.call("saveCustomEvent", {})["error"]["code"] == -32602
    model["refused"]["invalid_params"] = 2
    model["pending"] = 9
    status = box.call("status", {})["result"]
    assert status["pending"]["total"] == model["pending"]
    model["bytes"] = status["bytes"]
    return model


def test_scrape_matches_what_was_done(outbox: Outbox) -> None:
    model = drive(outbox)

    def check() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        content_type, text = scrape(outbox)
        assert content_type.startswith("text/plain; version=0.0.4")
        found = samples(text)
        for kind, n in model["saves"].items():
            assert value(found, "push_outbox_saves_total", kind=kind) == n
        assert value(found, "push_outbox_refused_total", reason="invalid_params") == 2
        assert value(found, "push_outbox_refused_total", reason="store_full") == 0
        assert value(found, "push_outbox_pending_items") == model["pending"]
        assert value(found, "push_outbox_pending_bytes") == model["bytes"]
        assert value(found, "push_outbox_leased_items") == 0
        assert value(found, "push_outbox_oldest_pending_age_seconds") >= 0
        assert value(found, "push_outbox_delivered_objects_total") == 0
        assert value(found, "push_outbox_store_bytes") > 0
        assert value(found, "push_outbox_health") == 0
        assert value(found, "push_outbox_journal_fsync_seconds_count") >= 0
        assert value(found, "push_outbox_snapshot_seconds_bucket", le="+Inf") == value(
            found, "push_outbox_snapshot_seconds_count"
        )
        version = outbox.call("status", {})["result"]["version"]
        assert value(found, "push_outbox_build_info", version=version) == 1
        return found

    first = eventually(check)
    # Every family has HELP and TYPE lines.
    _, text = scrape(outbox)
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    helps = {line.split()[2] for line in text.splitlines() if line.startswith("# HELP ")}
    assert names == helps and len(names) == 15
    # A lease shows as leased items; counters never go down.
    lease = outbox.call("flushPending", {"max": 4, "leaseMs": 60_000})["result"]
    assert len(lease["items"]) == 4

    def leased() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        found = samples(scrape(outbox)[1])
        assert value(found, "push_outbox_leased_items") == 4
        return found

    second = eventually(leased)
    for key, v in first.items():
        if key[0].endswith("_total") or key[0].endswith("_count"):
            assert second[key] >= v, key


def test_promtool_accepts_the_exposition(outbox: Outbox) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip(
            "promtool not installed (Debian package prometheus; .ci/setup installs it where it can)"
        )
    drive(outbox)
    text = eventually(lambda: scrape(outbox)[1])
    result = subprocess.run(
        [promtool, "check", "metrics"], input=text.encode(), capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_openmetrics_when_the_scraper_asks(outbox: Outbox) -> None:
    model = drive(outbox)

    def check() -> None:
        content_type, text = scrape(outbox, accept=f"{OPENMETRICS};version=1.0.0,text/plain;q=0.5")
        assert content_type.startswith(OPENMETRICS)
        assert text.endswith("# EOF\n")
        found = samples(text, openmetrics=True)
        assert (
            value(found, "push_outbox_saves_total", kind="customEvent")
            == model["saves"]["customEvent"]
        )
        assert value(found, "push_outbox_pending_items") == model["pending"]

    eventually(check)
    content_type, text = scrape(outbox, accept="text/plain")
    assert content_type.startswith("text/plain; version=0.0.4") and "# EOF" not in text


def test_metrics_file_written_atomically_and_at_exit(tmp_path: Path) -> None:
    path = tmp_path / "out" / "push_outbox.prom"
    path.parent.mkdir()
    box = Outbox(tmp_path / "store", "--metrics-file", str(path), "--snapshot-interval", "0.2")
    box.call("saveCustomEvent", {"name": "e", "user": USER})

    def written() -> None:
        assert path.exists()
        found = samples(path.read_text())
        assert value(found, "push_outbox_saves_total", kind="customEvent") == 1

    eventually(written)
    for n in range(3):
        box.call("saveCustomEvent", {"name": f"x{n}"})
    assert box.stop() == 0
    found = samples(path.read_text())
    assert value(found, "push_outbox_saves_total", kind="customEvent") == 4
    assert value(found, "push_outbox_pending_items") == 4
    # Only the file: no temp file left in its directory.
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]

    # `flush` with no stub and no default user: the items without a user become dead letters, and
    # its metrics file says so when it exits.
    flushed = tmp_path / "out" / "flush.prom"
    result = subprocess.run(
        [
            binary(),
            "flush",
            "--store",
            str(tmp_path / "store"),
            "--format",
            "usersTrack",
            "--metrics-file",
            str(flushed),
        ],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode()
    found = samples(flushed.read_text())
    assert value(found, "push_outbox_dead_letters", reason="no_identifier") == 3
    assert value(found, "push_outbox_pending_items") == 0
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, flushed.name])


def call_within(box: Outbox, seconds: float, method: str, params: dict[str, Any]) -> Any:
    """`box.call` on a thread: its answer, or None when none came within `seconds` (the loop hangs)."""
    answers: list[Any] = []
    caller = threading.Thread(target=lambda: answers.append(box.call(method, params)), daemon=True)
    caller.start()
    caller.join(seconds)
    return answers[0] if answers else None


@pytest.mark.parametrize("planted", ["fifo", "symlink"])
def test_nothing_planted_at_a_temp_name_blocks_or_redirects(tmp_path: Path, planted: str) -> None:
    """Issue 40 item 9: the metrics file's temp name was `PATH.tmp.<pid>`, opened without `O_EXCL`:
    a FIFO there hung the loop for good (no answer, SIGTERM ignored), a symlink stopped the writes.
    Every name the old code used (the metrics file's; the store's checkpoint, load image and its
    discard) is planted; the loop still answers, the metrics file still advances, SIGTERM exits, and
    nothing planted is opened, replaced or written through."""
    path = tmp_path / "out" / "push_outbox.prom"
    path.parent.mkdir()
    store = tmp_path / "store"
    victim = tmp_path / "victim"
    victim.write_bytes(b"untouched")
    box = Outbox(store, "--metrics-file", str(path), "--snapshot-interval", "0.1")
    try:
        eventually(lambda: assert_saves(path, 0))
        pid = box.proc.pid
        names = [
            path.parent / f"{path.name}.tmp.{pid}",
            store / f"checkpoint.json.tmp.{pid}",
            store / f"load.image.tmp.{pid}",
            store / f"load.image.old.tmp.{pid}",
        ]
        for name in names:
            if planted == "fifo":
                os.mkfifo(name)
            else:
                name.symlink_to(victim)
        for n in range(3):
            assert call_within(box, 10, "saveCustomEvent", {"name": f"e{n}", "user": USER})
            time.sleep(
                0.3
            )  # a few snapshot intervals: the metrics file and the checkpoint are written
        status = call_within(box, 10, "status", {})
        assert status and "result" in status, (
            "no answer to status with something planted at a temp name"
        )
        eventually(lambda: assert_saves(path, 3))
        box.proc.send_signal(signal.SIGTERM)
        assert box.proc.wait(timeout=10) == 0
        for name in names:  # still there, untouched: the writes went under other names
            assert stat.S_ISFIFO(name.lstat().st_mode) if planted == "fifo" else name.is_symlink()
        assert victim.read_bytes() == b"untouched"
        assert_saves(path, 3)
    finally:
        if box.proc.poll() is None:
            box.proc.kill()
            box.proc.wait()


def assert_saves(path: Path, saves: int) -> None:
    assert path.exists()
    found = samples(path.read_text())
    assert value(found, "push_outbox_saves_total", kind="customEvent") == saves


def raw_http(port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(payload)
        except OSError:
            pass
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        return data


def test_hostile_http_never_stops_the_server(outbox: Outbox) -> None:
    port = outbox.port
    # Anything but GET /metrics: 404.
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(outbox.url("/"), timeout=5)
    assert missing.value.code == 404
    # Garbage and an oversized head: 400, never a crash.
    assert raw_http(port, b"\x00\xff garbage \x01\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw_http(
        port, b"GET /metrics HTTP/1.1\r\n" + b"X: " + b"a" * 100_000 + b"\r\n\r\n"
    ).startswith(b"HTTP/1.1 431")
    assert raw_http(port, b"GET /metrics HTTP/9\r\n\r\n").startswith(b"HTTP/1.1 400")
    # A connection closed at once, then a slowloris that never finishes its head: cut off after the
    # request timeout, while JSON-RPC answers throughout.
    socket.create_connection(("127.0.0.1", port)).close()
    slow = socket.create_connection(("127.0.0.1", port))
    slow.sendall(b"GET /metr")
    started = time.monotonic()
    assert "result" in outbox.call("saveCustomEvent", {"name": "during", "user": USER})
    assert "result" in outbox.call("status", {})
    slow.settimeout(10)
    answer = slow.recv(4096)
    slow.close()
    assert answer.startswith(b"HTTP/1.1 408") or answer == b""
    assert time.monotonic() - started < 8
    # Still serving both sides.
    assert "result" in outbox.call("status", {})
    found = eventually(lambda: samples(scrape(outbox)[1]))
    assert value(found, "push_outbox_saves_total", kind="customEvent") >= 1
    assert outbox.proc.poll() is None


def exchange(port: int, pieces: list[bytes], gap: float = 0.3) -> bytes:
    """Sends `pieces` on one connection, `gap` seconds apart, then reads until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for n, piece in enumerate(pieces):
            if n:
                time.sleep(gap)
            try:
                s.sendall(piece)
            except OSError:
                break  # closed after its answer: what is left was never going to be read
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return data


def statuses(data: bytes) -> list[int]:
    return [int(code) for code in re.findall(rb"^HTTP/1\.1 (\d{3}) ", data, re.M)]


GET = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
SEGMENTED = [
    ("two pipelined GETs", GET + GET, [200]),
    ("GET with a body", b"GET /metrics HTTP/1.1\r\nContent-Length: 4\r\n\r\nbody", [200]),
    ("POST with a body", b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", [404]),
    ("404 then a GET", b"GET /nope HTTP/1.1\r\n\r\n" + GET, [404]),
    ("a GET then garbage", GET + b"\x00\xff garbage\r\n\r\n", [200]),
]


@pytest.mark.parametrize("name,payload,want", SEGMENTED, ids=[case[0] for case in SEGMENTED])
def test_answer_does_not_depend_on_segmentation(
    outbox: Outbox, name: str, payload: bytes, want: list[int]
) -> None:
    """Issue 40 item 11: only the head is read; what follows it (a pipelined request, a body) in
    the same read or 0.3 s later gets the same answer: one, then `Connection: close`."""
    together = exchange(outbox.port, [payload])
    cut = payload.index(b"\r\n\r\n") + 4
    apart = exchange(outbox.port, [payload[:cut], payload[cut:]])
    assert statuses(together) == statuses(apart) == want, (name, together[:200], apart[:200])
    for data in (together, apart):
        assert b"Connection: close" in data
        assert (b"push_outbox_saves_total" in data) == (want == [200])


@pytest.mark.timeout(60)
def test_slow_connections_do_not_hold_a_scrape(outbox: Outbox) -> None:
    """Issue 40 item 11: a scrape waited 33 s behind 100 slow connections. Connections are served
    together, so a scrape is answered while 100 slow-loris heads are still open."""
    slow = []
    try:
        for _ in range(100):
            s = socket.create_connection(("127.0.0.1", outbox.port), timeout=10)
            s.sendall(b"GET /metr")
            slow.append(s)
        answer = exchange(outbox.port, [GET])
        assert statuses(answer) == [200] and b"push_outbox_saves_total" in answer
        assert "result" in outbox.call("status", {})
    finally:
        for s in slow:
            s.close()
    assert statuses(exchange(outbox.port, [GET])) == [200]


def test_oversized_and_late_heads_are_cut_off(outbox: Outbox) -> None:
    """A head over 8 KiB gets 431 (the rest of it is read and dropped, so the answer arrives); a
    head not finished within 2 s gets 408."""
    huge = b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n"
    assert statuses(exchange(outbox.port, [huge])) == [431]
    assert statuses(exchange(outbox.port, [b"GET /metr"])) == [408]


def test_non_loopback_must_be_spelled_out(tmp_path: Path) -> None:
    # A bare port means 127.0.0.1; a malformed address is a usage error (exit 2).
    result = subprocess.run(
        [binary(), "--memory", "--metrics-listen", "not-an-address:x"],
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert result.returncode == 2, result.stderr.decode()
    assert b"--metrics-listen" in result.stderr
    port = free_port()
    proc = subprocess.Popen(
        [binary(), "--memory", "--metrics-listen", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin and proc.stdout
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n')
        proc.stdin.flush()
        assert proc.stdout.readline()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert response.status == 200
    finally:
        assert proc.stdin
        proc.stdin.close()
        proc.wait(timeout=30)


def test_an_address_in_use_stops_the_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [binary(), "--memory", "--metrics-listen", f"127.0.0.1:{port}"],
            input=b"",
            capture_output=True,
            timeout=30,
        )
    assert result.returncode == 1, result.stderr.decode()
    error = json.loads(result.stdout.decode().splitlines()[0])["error"]
    assert error["code"] == -32007 and error["data"]["reason"] == "metrics_unavailable"


def test_import_writes_its_metrics_file_at_exit(tmp_path: Path) -> None:
    group = tmp_path / "group.json"
    group.write_text(
        json.dumps(
            {
                "pending_custom_events": [{"event_name": "a"}, {"event_name": "b"}],
                "pending_custom_attributes": [{"favorite_drink": "latte"}],
                "pending_user_attributes": [{"email": "ann@example.com"}],
            }
        )
    )
    path = tmp_path / "import.prom"
    result = subprocess.run(
        [
            binary(),
            "import",
            "--store",
            str(tmp_path / "store"),
            "--metrics-file",
            str(path),
            str(group),
        ],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode()
    found = samples(path.read_text())
    assert value(found, "push_outbox_saves_total", kind="customEvent") == 2
    assert value(found, "push_outbox_saves_total", kind="customAttribute") == 1
    assert value(found, "push_outbox_saves_total", kind="userAttribute") == 1
    assert value(found, "push_outbox_pending_items") == 4


class Refuse401(http.server.BaseHTTPRequestHandler):
    """A Braze stand-in that refuses every request with 401."""

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = b'{"message":"Invalid API key"}'
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def refusing_braze(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse401)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    monkeypatch.setenv("BRAZE_API_KEY", "test-key")
    yield f"http://127.0.0.1:{stub.server_address[1]}"
    stub.shutdown()


def test_braze_401_counts_the_request_and_degrades_health(
    tmp_path: Path, refusing_braze: str
) -> None:
    box = Outbox(tmp_path / "store", "--deliver", "--braze-endpoint", refusing_braze)
    box.call("saveCustomEvent", {"name": "e", "user": USER})

    def check() -> None:
        found = samples(scrape(box)[1])
        assert value(found, "push_outbox_braze_requests_total", code="401") >= 1
        assert value(found, "push_outbox_health") == 1
        assert value(found, "push_outbox_delivered_objects_total") == 0

    eventually(check, seconds=10)
    box.stop()


def test_deliver_writes_its_metrics_file_at_exit(tmp_path: Path, refusing_braze: str) -> None:
    store = tmp_path / "store"
    box = Outbox(store)
    box.call("saveCustomEvent", {"name": "e", "user": USER})
    box.stop()
    path = tmp_path / "deliver.prom"
    result = subprocess.run(
        [
            binary(),
            "deliver",
            "--store",
            str(store),
            "--braze-endpoint",
            refusing_braze,
            "--metrics-file",
            str(path),
        ],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode != 0  # Braze refused the key
    found = samples(path.read_text())
    assert value(found, "push_outbox_braze_requests_total", code="401") == 1
    assert value(found, "push_outbox_health") == 1
    assert value(found, "push_outbox_pending_items") == 1
