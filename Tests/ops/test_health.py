"""`status.health`, `status.problems` and `push_outbox_health` / `push_outbox_problem{reason}` over the
real binary (issue 19 item 6): each reason is brought about for real (a file-size limit on the live
process, a torn segment, a full store, a Braze stand-in answering 401 or 500, an old item) and must
show in `status` and in the scraped metrics, then clear when the cause goes.

Binary: $PUSH_OUTBOX_BIN, else .build/debug/push-outbox.
"""

from __future__ import annotations

import http.server
import resource
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_metrics import USER, Outbox, eventually, samples, scrape, value

REASONS = [
    "journal_failing",
    "data_quarantined",
    "store_near_cap",
    "delivery_stopped",
    "delivery_retrying",
    "pending_too_old",
]
GAUGE = {"ok": 0, "degraded": 1, "failing": 2}


def health(box: Outbox) -> tuple[str, dict[str, dict[str, Any]]]:
    status = box.call("status", {})["result"]
    return status["health"], {p["reason"]: p for p in status["problems"]}


def expect(
    box: Outbox, state: str, reasons: set[str], seconds: float = 10.0
) -> dict[str, dict[str, Any]]:
    """`status` and the metrics agree on the state and the reasons (eventually: metrics publish every 100 ms)."""

    def check() -> dict[str, dict[str, Any]]:
        got, problems = health(box)
        assert (got, set(problems)) == (state, reasons), problems
        for problem in problems.values():
            assert set(problem) == {"reason", "since", "detail"} and problem["detail"], problem
        found = samples(scrape(box)[1])
        assert value(found, "push_outbox_health") == GAUGE[state]
        assert {r for r in REASONS if value(found, "push_outbox_problem", reason=r) == 1} == reasons
        return problems

    result: dict[str, dict[str, Any]] = eventually(check, seconds=seconds)
    return result


def stop(box: Outbox) -> None:
    if box.proc.poll() is None:
        box.stop()


def test_journal_failing_is_failing_then_ok(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "store", "--fsync", "always", "--snapshot-interval", "3600")
    try:
        assert "result" in box.call("saveCustomEvent", {"name": "e", "user": USER})
        expect(box, "ok", set())
        # Every write past byte 1 of a file now fails with EFBIG (SIGXFSZ is ignored).
        resource.prlimit(box.proc.pid, resource.RLIMIT_FSIZE, (1, resource.RLIM_INFINITY))
        reply = box.call("saveCustomEvent", {"name": "e", "user": USER})
        assert reply["error"]["data"]["reason"] == "storage_unavailable", reply
        problems = expect(box, "failing", {"journal_failing"})
        assert "File too large" in problems["journal_failing"]["detail"], problems
        resource.prlimit(
            box.proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        )
        assert "result" in box.call("saveCustomEvent", {"name": "e", "user": USER})
        expect(box, "ok", set())
    finally:
        stop(box)


def test_data_quarantined_since_start_is_degraded(tmp_path: Path) -> None:
    store = tmp_path / "store"
    box = Outbox(store)
    assert "result" in box.call("saveCustomEvent", {"name": "e", "user": USER})
    assert box.stop() == 0
    (segment,) = sorted(store.glob("segment.*"))
    with open(segment, "ab") as f:
        f.write(b"\x40\x00\x00\x00torn")  # a record header cut short: a torn tail
    box = Outbox(store)
    try:
        problems = expect(box, "degraded", {"data_quarantined"})
        assert "tornTail" in problems["data_quarantined"]["detail"]
        assert list((store / "quarantine").iterdir())
    finally:
        stop(box)


def test_store_near_cap_is_degraded_until_drained(tmp_path: Path) -> None:
    box = Outbox(
        tmp_path / "store", "--max-store-bytes", str(256 << 10), "--snapshot-interval", "0.05"
    )
    try:
        expect(box, "ok", set())
        props = {f"p{k}": "x" * 250 for k in range(8)}
        while "result" in (
            reply := box.call("saveCustomEvent", {"name": "e", "properties": props, "user": USER})
        ):
            pass
        assert reply["error"]["data"]["limit"] == "max-store-bytes", reply
        expect(box, "degraded", {"store_near_cap"})
        found = samples(scrape(box)[1])
        assert value(found, "push_outbox_store_max_bytes") == 256 << 10
        status = box.call("status", {})["result"]
        assert status["maxStoreBytes"] == 256 << 10
        assert 0.9 * (256 << 10) * 0.5 < status["storeBytes"] <= 256 << 10
        assert value(found, "push_outbox_store_bytes") <= 256 << 10
        box.call("flushPending", {})
        expect(box, "ok", set())  # the snapshot deleted the drained segments
    finally:
        stop(box)


def test_pending_older_than_max_pending_age_is_degraded(tmp_path: Path) -> None:
    box = Outbox(tmp_path / "store", "--max-pending-age", "1")
    try:
        assert "result" in box.call("saveCustomEvent", {"name": "e", "user": USER})
        item = box.call("flushPending", {"leaseMs": 60_000})["result"]["items"][0]
        box.call("releaseFlush", {"flushId": box.call("status", {})["result"]["lease"]["flushId"]})
        problems = expect(box, "degraded", {"pending_too_old"}, seconds=15)
        # since: the moment the item passed the age, exactly
        saved, since = item["savedAt"], problems["pending_too_old"]["since"]
        assert since[:19] != saved[:19] and since[19:] == saved[19:], (saved, since)
        box.call("flushPending", {})
        expect(box, "ok", set())
    finally:
        stop(box)


class Braze(http.server.BaseHTTPRequestHandler):
    """A Braze stand-in answering every request with `status` (set on the server)."""

    def do_POST(self) -> None:  # noqa: N802 (the http.server name)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = b'{"message":"no"}'
        self.send_response(self.server.answer)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def braze(monkeypatch: pytest.MonkeyPatch) -> Iterator[http.server.ThreadingHTTPServer]:
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Braze)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    monkeypatch.setenv("BRAZE_API_KEY", "test-key")
    yield stub
    stub.shutdown()
    stub.server_close()


def endpoint(stub: http.server.ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{stub.server_address[1]}"


def test_braze_401_stops_delivery_degraded(
    tmp_path: Path, braze: http.server.ThreadingHTTPServer
) -> None:
    braze.answer = 401  # type: ignore[attr-defined]
    box = Outbox(tmp_path / "store", "--deliver", "--braze-endpoint", endpoint(braze))
    try:
        box.call("saveCustomEvent", {"name": "e", "user": USER})
        problems = expect(box, "degraded", {"delivery_stopped"})
        assert "401" in problems["delivery_stopped"]["detail"]
    finally:
        stop(box)


def test_delivery_retrying_longer_than_max_retry_age_degraded(
    tmp_path: Path, braze: http.server.ThreadingHTTPServer
) -> None:
    braze.answer = 500  # type: ignore[attr-defined]
    box = Outbox(
        tmp_path / "store", "--deliver", "--braze-endpoint", endpoint(braze), "--max-retry-age", "1",
        "--drain-timeout", "0",  # Braze keeps failing: no drain at stdin's end
    )
    try:
        box.call("saveCustomEvent", {"name": "e", "user": USER})
        problems = expect(box, "degraded", {"delivery_retrying"}, seconds=20)
        assert "500" in problems["delivery_retrying"]["detail"], problems
    finally:
        stop(box)


def test_store_bytes_count_the_whole_directory(tmp_path: Path) -> None:
    """status.storeBytes and push_outbox_store_bytes are the directory's files: segments, the
    checkpoint, LOCK and quarantine/ (measured here by walking it)."""
    store = tmp_path / "store"
    box = Outbox(store, "--snapshot-interval", "0.05")
    try:
        for n in range(20):
            assert "result" in box.call("saveCustomEvent", {"name": f"e{n}", "user": USER})
        box.call("flushPending", {"max": 5})

        def settled() -> None:
            status = box.call("status", {})["result"]
            assert status["lastSnapshotAt"] is not None and (store / "checkpoint.json").exists()
            on_disk = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
            assert status["storeBytes"] == on_disk > status["journalBytes"]
            assert value(samples(scrape(box)[1]), "push_outbox_store_bytes") == on_disk

        eventually(settled, seconds=10)
    finally:
        stop(box)
