"""Upgrade of a format-1 store (snapshot.json, snapshot.prev.json, journal.* with JSON payloads) to
format 2. The fixture fixtures/v1-store/ was written by the format-1 binary (make_v1_store.py); the
expected items are what that binary handed out from it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import (
    ITEM,
    flush_all,
    item_payload,
    journals_v1,
    poll,
    read_checkpoint,
    read_segment,
    run_once,
    segments,
    strict_equal,
)

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "v1-store"
EXPECTED = json.loads((FIXTURE.parent / "v1-store.expected.json").read_text())["items"]
V1_FILES = {"snapshot.json", "snapshot.prev.json"}


def v1_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(FIXTURE, store)
    os.chmod(store, 0o700)
    return store


def v1_left(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir() if p.name in V1_FILES) + [
        p.name for p in journals_v1(store)
    ]


def check_items(items: list[dict]) -> None:
    assert len(items) == len(EXPECTED), (
        f"{len(items)} items after the upgrade, expected {len(EXPECTED)}"
    )
    for got, want in zip(items, EXPECTED):
        assert strict_equal(got, want), (
            f"item differs after the upgrade:\n got  {got}\n want {want}"
        )


def test_fixture_covers_what_the_upgrade_must_read() -> None:
    names = {p.name for p in FIXTURE.iterdir()}
    assert V1_FILES <= names and len(journals_v1(FIXTURE)) >= 2, names
    kinds = {it["kind"] for it in EXPECTED}
    assert kinds == {"customEvent", "customAttribute", "userAttribute"}
    assert all(it.get("user") for it in EXPECTED)
    assert {it["deliveryCount"] for it in EXPECTED} == {0, 1}
    assert any(it["id"].startswith("client-id-") for it in EXPECTED)
    assert any(r.type == 2 for j in journals_v1(FIXTURE) for r in read_segment(j)), (
        "no removal record in the journals"
    )


@pytest.mark.timeout(60)
def test_v1_store_is_upgraded_with_every_item_intact(
    outbox_bin: Path, spawn, tmp_path: Path
) -> None:
    store = v1_store(tmp_path)
    ob = spawn(store)
    status = ob.result("status")
    assert status["pending"]["total"] == len(EXPECTED), status
    assert not [
        w for w in status["recovery"] if w.get("code") in ("recoveredWithLoss", "snapshotCorrupt")
    ], status
    # The format-1 files go once the format-2 checkpoint is durable (by the first snapshot at the latest).
    assert poll(lambda: not v1_left(store) and (store / "checkpoint.json").exists(), 15), (
        f"format-1 files still there: {sorted(p.name for p in store.iterdir())}"
    )
    ob.close(expect=0)
    header = read_checkpoint(store)
    assert header["items"] == len(EXPECTED) and header["nextSeq"] > max(
        it["seq"] for it in EXPECTED
    ), header
    items = [item_payload(r) for s in segments(store) for r in read_segment(s) if r.type == ITEM]
    assert len({i["id"] for i in items}) >= len(EXPECTED), "the segments do not hold every item"
    assert not v1_left(store)

    flushed = flush_all(outbox_bin, store)
    check_items(flushed.items)


@pytest.mark.timeout(60)
def test_upgrade_interrupted_by_kill9_loses_nothing(
    outbox_bin: Path, spawn, tmp_path: Path
) -> None:
    store = v1_store(tmp_path)
    ob = spawn(store, snapshot_interval=3600)
    assert ob.result("status")["pending"]["total"] == len(EXPECTED)
    ob.kill9()
    # Whatever the upgrade had reached, the next start has every item, once.
    flushed = flush_all(outbox_bin, store)
    check_items(flushed.items)
    assert not v1_left(store), sorted(p.name for p in store.iterdir())


@pytest.mark.timeout(60)
def test_upgraded_store_keeps_new_saves_after_kill9(
    outbox_bin: Path, spawn, tmp_path: Path
) -> None:
    store = v1_store(tmp_path)
    ob = spawn(store, fsync="always", snapshot_interval=3600)
    new = ob.result(
        "saveCustomEvent",
        {"name": "after_upgrade", "properties": {"k": 1}, "user": {"externalId": "new"}},
    )
    assert new["seq"] > max(it["seq"] for it in EXPECTED), new
    ob.kill9()
    flushed = flush_all(outbox_bin, store)
    check_items(flushed.items[:-1])
    assert (flushed.items[-1]["id"], flushed.items[-1]["seq"]) == (new["id"], new["seq"])


@pytest.mark.timeout(30)
@pytest.mark.parametrize("damage", ["corrupt-snapshot", "torn-journal-tail"])
def test_v1_quarantine_symlink_is_not_followed(
    outbox_bin: Path, tmp_path: Path, damage: str
) -> None:
    """A format-1 store with a planted `quarantine -> elsewhere` link and a damaged file that the
    format-1 recovery copies to quarantine/: no copy may land outside the store (the guard of
    `StoreFiles.quarantine` covers format 1 too)."""
    store = v1_store(tmp_path)
    if damage == "corrupt-snapshot":  # set aside, and the previous snapshot used
        path = store / "snapshot.json"
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    else:  # the last record cut short: copied to quarantine/, then cut off
        path = journals_v1(store)[-1]
        path.write_bytes(path.read_bytes()[:-3])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (store / "quarantine").symlink_to(elsewhere, target_is_directory=True)
    proc = run_once(
        outbox_bin, store, input=b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n'
    )
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert not list(elsewhere.iterdir()), (
        f"files written through the quarantine link: {list(elsewhere.iterdir())}"
    )
    assert (store / "quarantine").is_symlink(), "the planted link was replaced"


@pytest.mark.timeout(30)
def test_v1_journal_replay_could_not_apply_is_kept_in_quarantine(
    outbox_bin: Path, tmp_path: Path
) -> None:
    """A format-1 journal damaged in the middle stops the replay: the upgrade reports the loss and
    removes the format-1 files, but the segment it could not apply (acknowledged items nobody has
    read) must survive byte for byte in quarantine/, as the warning says."""
    store = v1_store(tmp_path)
    damaged = journals_v1(store)[-1]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 4] ^= 0xFF
    damaged.write_bytes(bytes(data))
    proc = run_once(
        outbox_bin, store, input=b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n'
    )
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)["result"]
    losses = [w for w in status["recovery"] if w["code"] == "recoveredWithLoss"]
    assert losses and losses[0]["file"] == damaged.name, status["recovery"]
    assert v1_left(store) == [], f"format-1 files left after the upgrade: {v1_left(store)}"
    copies = (
        list((store / "quarantine").glob(damaged.name + ".*"))
        if (store / "quarantine").is_dir()
        else []
    )
    assert [c.read_bytes() for c in copies] == [bytes(data)], (
        f"the unapplied journal {damaged.name} is not in quarantine/: {copies}"
    )
