"""Replies are values, rendered after the group commit (issue 8, section 4): the four bugs of replies
patched in place, each inside a batch and outside one.

1. Framing under RLIMIT_FSIZE 512 B: a save with large properties, a flushPending notification, a status.
2. Two saves with the same client id in a failing burst share one outcome; nothing claimed stored is lost.
3. A full 512 KiB tmpfs plus an ack/flush/release notification (also with --strings truncate).
4. With --fsync always and fsync failing with EIO, a refused save never reappears after kill -9.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    Outbox,
    build_fsync_shim,
    file_size_limit,
    dumps,
    fill,
    flush_all,
    mount_tmpfs,
    replies_by_id,
    rpc,
    unmount,
)

BIG = {f"pad{i}": "p" * 200 for i in range(10)}


def send_burst(ob: Outbox, messages: list[dict], batch: bool) -> None:
    """One write: a batch line, or one line per message."""
    text = dumps(messages) + "\n" if batch else "".join(dumps(m) + "\n" for m in messages)
    assert ob.write_raw(text.encode()), f"process gone: rc={ob.proc.poll()} stderr={ob.stderr[-500:]!r}"


def finish(ob: Outbox, ids: list[Any]) -> dict[Any, list[dict]]:
    """Waits for `ids`, closes stdin, requires a clean exit, valid framing and one reply per id."""
    finish_waiting(ob, ids)
    rc = ob.close(expect=None)
    assert rc >= 0, f"killed by signal {-rc}; stderr={ob.stderr[-1500:]!r}"
    assert not ob.bad_lines, f"stdout lines that are not JSON: {ob.bad_lines[:3]!r}"
    assert not ob.partial, f"stdout ends in a partial line: {ob.partial[:300]!r}"
    by_id = replies_by_id(ob.lines)
    twice = {k: v for k, v in by_id.items() if len(v) != 1}
    assert not twice, f"requests answered more than once: {twice}"
    assert set(ids) <= set(by_id), f"replies for ids {sorted(map(str, by_id))}, expected {ids}"
    assert None not in by_id, f"a reply with id null (the server could not read a request): {by_id[None]}"
    return {k: v[0] for k, v in by_id.items()}


def finish_waiting(ob: Outbox, ids: list[Any]) -> None:
    try:
        ob.wait_ids(ids, timeout=10)
    except AssertionError as error:
        raise AssertionError(f"{error}; stdout lines that are not JSON: {ob.bad_lines[:2]!r}") from None


def is_storage_error(reply: dict) -> bool:
    return reply.get("error", {}).get("code") == -32003


# ---------------------------------------------------------------------------------------------
# 1. framing under a 512-byte file size limit
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("batch", [False, True], ids=["lines", "batch"])
def test_framing_survives_a_failing_journal(spawn, tmp_path: Path, batch: bool) -> None:
    store = tmp_path / "store"
    ob = spawn(store, fsync="always", snapshot_interval=3600, preexec_fn=file_size_limit(512))
    ob.result("status")
    burst = [
        rpc("saveCustomEvent", {"name": "big", "properties": BIG, "user": {"externalId": "u1"}}, 1),
        rpc("flushPending", {}),
        rpc("status", {}, 3),
    ]
    send_burst(ob, burst, batch)
    by_id = finish(ob, [1, 3])
    assert is_storage_error(by_id[1]), by_id[1]
    assert by_id[3]["result"]["pending"]["total"] == 0, f"status counts a refused save: {by_id[3]}"
    if batch:
        assert sum(1 for line in ob.lines if isinstance(line, list)) == 1, ob.lines


# ---------------------------------------------------------------------------------------------
# 2. the same client id twice in a failing burst
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("batch", [False, True], ids=["lines", "batch"])
def test_repeated_client_id_in_a_failing_burst_shares_the_outcome(outbox_bin: Path, spawn, tmp_path: Path, batch: bool) -> None:
    store = tmp_path / "store"
    ob = spawn(store, fsync="always", snapshot_interval=3600, preexec_fn=file_size_limit(512))
    ob.result("status")
    params = {"id": "same-client-id", "name": "dup", "properties": BIG, "user": {"externalId": "u1"}}
    burst = [rpc("saveCustomEvent", params, 1), rpc("saveCustomEvent", params, 2), rpc("status", {}, 3)]
    send_burst(ob, burst, batch)
    by_id = finish(ob, [1, 2, 3])
    first, second = by_id[1], by_id[2]
    if is_storage_error(first):
        assert is_storage_error(second), f"first refused, repeat answered {second}"
    else:
        assert "result" in first and "result" in second, (first, second)
        assert (first["result"]["id"], first["result"]["seq"]) == (second["result"]["id"], second["result"]["seq"])
    claimed = 0 if is_storage_error(first) else 1
    assert by_id[3]["result"]["pending"]["total"] == claimed, f"status disagrees with the replies: {by_id[3]}"

    flushed = flush_all(outbox_bin, store)
    assert len(flushed.items) == claimed, f"claimed {claimed} stored, found {flushed.items}"
    if claimed:
        assert flushed.items[0]["id"] == "same-client-id"


# ---------------------------------------------------------------------------------------------
# 3. a full disk plus a notification
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_fs(tmp_path: Path):
    mnt = tmp_path / "tiny"
    why = mount_tmpfs(mnt, "512k")
    if why:
        pytest.skip(why)
    yield mnt
    unmount(mnt)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("strings", ["reject", "truncate"])
@pytest.mark.parametrize("method", ["ackFlush", "flushPending", "releaseFlush"])
@pytest.mark.parametrize("batch", [False, True], ids=["lines", "batch"])
def test_full_disk_and_a_notification(spawn, tiny_fs: Path, batch: bool, method: str, strings: str) -> None:
    store = tiny_fs / "store"
    ob = spawn(store, "--strings", strings, fsync="always", snapshot_interval=3600)
    for n in range(3):
        ob.result("saveCustomEvent", {"name": "before", "properties": {"n": n}, "user": {"externalId": f"u{n}"}})
    lease = ob.result("flushPending", {"leaseMs": 600000, "max": 2})
    fill(tiny_fs / "junk", leave_bytes=0)
    # Larger than what is left of the segment's last page; a string to truncate makes the success
    # reply longer than the error.
    properties = {f"pad{i}": "p" * 200 for i in range(25)}
    if strings == "truncate":
        properties["long"] = "v" * 400
    notification = {"ackFlush": {"flushId": lease["flushId"]}, "releaseFlush": {"flushId": lease["flushId"]}, "flushPending": {}}
    burst = [
        rpc("saveCustomEvent", {"name": "full", "properties": properties, "user": {"externalId": "full"}}, 1),
        rpc(method, notification[method]),
        rpc("status", {}, 3),
    ]
    send_burst(ob, burst, batch)
    finish_waiting(ob, [1, 3])
    assert ob.alive(), f"died: rc={ob.proc.poll()} stderr={ob.stderr[-1500:]!r}"
    status = ob.result("status")
    (tiny_fs / "junk").unlink()
    by_id = finish(ob, [1, 3])
    assert is_storage_error(by_id[1]) or "result" in by_id[1], by_id[1]
    stored = 0 if is_storage_error(by_id[1]) else 1
    assert by_id[3]["result"]["pending"]["total"] == status["pending"]["total"], (by_id[3], status)
    assert status["pending"]["total"] <= 3 + stored

    # What the process last claimed is what the next one finds.
    again = spawn(store)
    after = again.result("status")
    again.close(expect=0)
    assert after["pending"] == status["pending"], f"claimed {status['pending']}, found {after['pending']}"


# ---------------------------------------------------------------------------------------------
# 4. fsync fails with EIO: the refused save never comes back
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("batch", [False, True], ids=["lines", "batch"])
def test_save_refused_by_a_failed_fsync_never_reappears(outbox_bin: Path, spawn, tmp_path: Path, batch: bool) -> None:
    shim = build_fsync_shim(tmp_path)
    control = tmp_path / "fail-fsync"
    store = tmp_path / "store"
    env = {"LD_PRELOAD": str(shim), "FAULT_FSYNC_CONTROL": str(control)}
    ob = spawn(store, fsync="always", snapshot_interval=3600, env=env)
    kept = [ob.result("saveCustomEvent", {"name": "kept", "properties": {"n": n}, "user": {"externalId": f"k{n}"}}) for n in range(3)]
    control.write_text("")
    burst = [rpc("saveCustomEvent", {"name": "refused", "properties": {"n": n}, "user": {"externalId": f"r{n}"}}, 10 + n) for n in range(3)]
    send_burst(ob, burst, batch)
    answers = ob.wait_ids([10, 11, 12])
    assert all(is_storage_error(a) for a in answers), f"fsync failed with EIO but: {answers}"
    ob.kill9()
    assert not ob.bad_lines, ob.bad_lines[:3]

    flushed = flush_all(outbox_bin, store)
    names = [it["name"] for it in flushed.items]
    assert "refused" not in names, f"a save answered -32003 came back after kill -9: {json.dumps(flushed.items)[:800]}"
    assert sorted((it["id"], it["seq"]) for it in flushed.items) == sorted((k["id"], k["seq"]) for k in kept), flushed.items


@pytest.mark.timeout(120)
@pytest.mark.parametrize("after", [1, 4, 9, 17, 30])
def test_fsync_failing_after_n_calls_loses_no_acknowledged_save(outbox_bin: Path, spawn, tmp_path: Path, after: int) -> None:
    """fsync starts failing at the N-th call, wherever that falls (a save, a checkpoint, a segment
    rewrite after a drain): every save answered ok is there after kill -9, none answered -32003 is."""
    shim = build_fsync_shim(tmp_path)
    store = tmp_path / "store"
    ob = spawn(store, fsync="always", snapshot_interval="0.02", env={"LD_PRELOAD": str(shim), "FAULT_FSYNC_AFTER": str(after)})
    ok: list[dict] = []
    refused: list[int] = []
    drained: set[str] = set()
    for n in range(40):
        reply = ob.call("saveCustomEvent", {"name": "e", "properties": {"n": n}, "user": {"externalId": f"u{n}"}})
        if "result" in reply:
            ok.append(reply["result"])
        else:
            assert is_storage_error(reply), reply
            refused.append(n)
        if n % 10 == 9:
            res = ob.call("flushPending", {"max": 3})
            if "result" in res:
                drained |= {it["id"] for it in res["result"]["items"]}
    assert ob.alive(), ob.stderr[-1000:]
    ob.kill9()
    assert not ob.bad_lines, ob.bad_lines[:3]
    assert refused, "fsync never failed: the shim is not in effect"

    flushed = flush_all(outbox_bin, store)
    got = {it["properties"]["n"] for it in flushed.items}
    assert not got & set(refused), f"saves answered -32003 came back: {sorted(got & set(refused))}"
    recovered = {(it["id"], it["seq"]) for it in flushed.items}
    missing = [r for r in ok if r["id"] not in drained and (r["id"], r["seq"]) not in recovered]
    assert not missing, f"acknowledged saves lost: {missing[:5]}"
