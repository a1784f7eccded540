"""Issue 15: an item held when a snapshot rewrites its segment survives the later snapshots.

The reported loss, as a deterministic test over the real binary: save two, take one out (a drain, or a
lease that is released or expires), keep saving across two snapshot intervals, exit, restart: every
item that was never taken out is still there. It existed only in optimized code, so CI runs this file
against the release binary too (see .ci/test-all). The failed-delivery variant is in
Tests/delivery/test_partial_drain_delivery.py. A crafted store in the shape those builds left shows
what recovery reports for it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import Outbox, flush_all, run_once
from store_files import CHECKPOINT, checkpoint_bytes, read_checkpoint, segments

SNAPSHOT = 0.1  # --snapshot-interval: a pause of 3 intervals always spans two snapshots


def save(ob: Outbox, name: str) -> str:
    return ob.result("saveCustomEvent", {"name": name, "user": {"externalId": "u"}})["id"]


def take_one_out(ob: Outbox, how: str) -> str:
    """Takes the oldest item out of the pending set the way `how` says; returns its id if it left for good."""
    if how == "drain":
        [item] = ob.result("flushPending", {"max": 1})["items"]
        return item["id"]
    lease = ob.result(
        "flushPending", {"max": 1, "leaseMs": 50 if how == "lease-expiry" else 60_000}
    )
    if how == "lease-release":
        assert ob.result("releaseFlush", {"flushId": lease["flushId"]})["released"] == 1
    else:
        time.sleep(0.1)
        ob.result("status")  # the lease is seen to expire
    return ""


@pytest.mark.parametrize("fsync", ["always", "everysec", "never"])
@pytest.mark.parametrize("how", ["drain", "lease-release", "lease-expiry"])
def test_an_item_held_through_a_segment_rewrite_survives_later_snapshots(
    outbox_bin: Path, tmp_path: Path, fsync: str, how: str
) -> None:
    store = tmp_path / "store"
    ob = Outbox(outbox_bin, store, fsync=fsync, snapshot_interval=SNAPSHOT)
    try:
        saved = [save(ob, "a"), save(ob, "b")]
        gone = take_one_out(ob, how)
        time.sleep(3 * SNAPSHOT)  # a snapshot rewrites the segment that holds what is left
        saved.append(save(ob, "c"))
        time.sleep(3 * SNAPSHOT)  # a later snapshot must keep that segment
        saved.append(save(ob, "d"))
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    files = sorted(p.name for p in segments(store))
    held = {item["id"] for item in flush_all(outbox_bin, store).items}
    assert held == set(saved) - {gone}, (
        f"lost {sorted(set(saved) - {gone} - held)}; files before the restart: {files}"
    )


def test_a_store_whose_checkpoint_counts_items_no_file_holds_is_refused_then_reported(
    outbox_bin: Path, tmp_path: Path
) -> None:
    """The shape the affected builds left: `checkpoint.json` counts 2 items and lists only the newest
    segment; the segment that held the older item was deleted."""
    store = tmp_path / "store"
    ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval=3600)
    try:
        save(ob, "b")
        ob.result("flushPending", {})  # seq 1 saved and drained (remove record seq 2)
        kept = save(ob, "kept")  # seq 3
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    header = read_checkpoint(store)
    assert header["segments"] and header["items"] == 1
    # Pretend an older item (seq 1) was still held: counted, and oldest, but in no file.
    header.update(items=2, firstSeq=1, segments=header["segments"][-1:])
    header.pop("held", None)  # as the affected builds wrote it
    (store / CHECKPOINT).write_bytes(
        checkpoint_bytes(json.dumps(header, separators=(",", ":")).encode())
    )
    refused = run_once(outbox_bin, store, input=b'{"jsonrpc":"2.0","id":1,"method":"status"}\n')
    assert refused.returncode == 1, refused
    [line] = [json.loads(x) for x in refused.stdout.splitlines()]
    assert line["id"] is None and line["error"]["code"] == -32007, line
    data = line["error"]["data"]
    assert data["reason"] == "missing_data" and data["missing"] == 1 and data["fromSeq"] == 1, data
    flushed = flush_all(outbox_bin, store, "--accept-loss")
    [loss] = flushed.warnings("recoveredWithLoss")
    assert loss["missing"] == 1 and loss["fromSeq"] == 1, loss
    assert [item["id"] for item in flushed.items] == [kept]
