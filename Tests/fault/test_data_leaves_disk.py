"""Flushed data leaves the disk (issue 8, section 8): once items are drained or their lease is acked,
no file of the store holds them after the next snapshot (compaction) or the exit, whichever comes
first. And twenty starts that save nothing leave at most a couple of segment files (section 9)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from conftest import Outbox, files_containing, flush_all, poll, journals_v1, run_once, segments

INTERVAL = 0.2
# A bound for polling, far above INTERVAL: the assertion is about the state reached, not the time.
BOUND = 20.0


def marked_saves(marker: str, count: int) -> list[tuple[str, dict]]:
    """Saves that carry the marker in an email, a user id and an event property."""
    out = []
    for n in range(count):
        user = {"externalId": f"{marker}-user-{n}"}
        out.append(("saveUserAttribute", {"field": "email", "value": f"{marker}.{n}@example.com", "user": user}))
        out.append(("saveCustomEvent", {"name": "signup", "properties": {"m": f"{marker}-{n}"}, "user": user}))
    return out


def keep_saves(count: int) -> list[tuple[str, dict]]:
    return [("saveCustomEvent", {"name": "kept", "properties": {"n": n}, "user": {"externalId": f"keep{n}"}}) for n in range(count)]


def save_all(ob: Outbox, saves: list[tuple[str, dict]]) -> None:
    for method, params in saves:
        ob.result(method, params)


def assert_gone(store: Path, marker: bytes, ob: Outbox | None = None) -> None:
    left = poll(lambda: not files_containing(store, marker), BOUND)
    assert left, f"flushed data still on disk in {files_containing(store, marker)} (files: {sorted(p.name for p in store.iterdir())})"
    if ob is not None:
        assert ob.alive(), ob.stderr[-1000:]


def check_kept(binary: Path, store: Path, count: int) -> None:
    flushed = flush_all(binary, store)
    assert sorted(it["properties"]["n"] for it in flushed.items) == list(range(count)), flushed.items


@pytest.mark.timeout(90)
@pytest.mark.parametrize("removal", ["drain", "ack"])
def test_flushed_items_leave_every_file_by_the_next_snapshot(outbox_bin: Path, spawn, tmp_path: Path, removal: str) -> None:
    store = tmp_path / "store"
    marker = f"mk{uuid.uuid4().hex[:12]}"
    marked = marked_saves(marker, 20)
    ob = spawn(store, snapshot_interval=INTERVAL)
    save_all(ob, marked)
    ob.result("status")
    # A checkpoint and a segment rotation happen while the marked items are held.
    assert poll(lambda: files_containing(store, marker.encode()), BOUND), "the saves never reached the disk"
    save_all(ob, keep_saves(5))
    if removal == "drain":
        out = ob.result("flushPending", {"max": len(marked)})
    else:
        out = ob.result("flushPending", {"max": len(marked), "leaseMs": 600000})
        assert ob.result("ackFlush", {"flushId": out["flushId"]})["acked"] == len(marked)
    assert all(marker in json.dumps(it) for it in out["items"]) and len(out["items"]) == len(marked)
    assert_gone(store, marker.encode(), ob)
    ob.kill9()
    assert not files_containing(store, marker.encode())
    check_kept(outbox_bin, store, 5)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("removal", ["drain", "ack"])
def test_flushed_items_leave_every_file_at_exit(outbox_bin: Path, tmp_path: Path, removal: str) -> None:
    """Short-lived processes: one saves, one drains (or leases, and a third acks); right after the
    last one exits, with no snapshot interval passing, the marker is in no file."""
    store = tmp_path / "store"
    marker = f"mk{uuid.uuid4().hex[:12]}"
    lines = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(marked_saves(marker, 10) + keep_saves(3))]
    proc = run_once(outbox_bin, store, "--snapshot-interval", "3600", input="".join(json.dumps(x) + "\n" for x in lines).encode())
    assert proc.returncode == 0 and b'"error"' not in proc.stdout, (proc.stdout[-500:], proc.stderr)
    assert files_containing(store, marker.encode()), "the saves never reached the disk"
    params = {"max": 20} if removal == "drain" else {"max": 20, "leaseMs": 600000}
    request = {"jsonrpc": "2.0", "id": 1, "method": "flushPending", "params": params}
    proc = run_once(outbox_bin, store, "--snapshot-interval", "3600", input=(json.dumps(request) + "\n").encode())
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert len(result["items"]) == 20
    if removal == "ack":
        ack = {"jsonrpc": "2.0", "id": 2, "method": "ackFlush", "params": {"flushId": result["flushId"]}}
        proc = run_once(outbox_bin, store, "--snapshot-interval", "3600", input=(json.dumps(ack) + "\n").encode())
        assert json.loads(proc.stdout).get("result") == {"acked": 20}, proc.stdout
    assert not files_containing(store, marker.encode()), f"flushed data still on disk after exit: {files_containing(store, marker.encode())}"
    check_kept(outbox_bin, store, 3)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("held", [0, 3])
def test_twenty_starts_that_save_nothing_leave_few_segments(outbox_bin: Path, tmp_path: Path, held: int) -> None:
    store = tmp_path / "store"
    if held:
        lines = [{"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in enumerate(keep_saves(held))]
        proc = run_once(outbox_bin, store, input="".join(json.dumps(x) + "\n" for x in lines).encode())
        assert proc.returncode == 0, proc.stderr
    status = b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n'
    for run in range(20):
        proc = run_once(outbox_bin, store, input=status if run % 2 else b"")
        assert proc.returncode == 0, (run, proc.stderr)
    names = sorted(p.name for p in store.iterdir())
    logs = segments(store) + journals_v1(store)
    assert len(logs) <= 2, f"{len(logs)} segment files after 20 empty starts: {names}"
    assert len(names) <= 6, f"files pile up: {names}"
    if held:
        check_kept(outbox_bin, store, held)
