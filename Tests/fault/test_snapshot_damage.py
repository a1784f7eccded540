"""A damaged checkpoint.json (format 2): the segments still hold every item, so every acknowledged
save comes back, with a warning and a copy in quarantine/. A clean exit leaves a checkpoint.

A damaged format-1 snapshot.json (read once, for the upgrade): with snapshot.prev.json and the
journal present, every item comes back; with no fallback, start-up fails loudly (exit 1) and deletes
nothing; a crafted version exits 2 and touches nothing. These use the checked-in fixture."""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pytest

from conftest import (
    CHECKPOINT,
    Ledger,
    check_invariants,
    copy_store,
    error_lines,
    flush_all,
    journals_v1,
    quarantined,
    read_checkpoint,
    run_once,
    save_run,
    segment_name,
    segments,
    strict_equal,
    tree,
)

SEED = 606
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "v1-store"
EXPECTED_V1 = json.loads((FIXTURE.parent / "v1-store.expected.json").read_text())["items"]
STATUS = b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n'


@pytest.fixture(scope="module")
def three_runs(outbox_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ledger]:
    """Saves 0-4 and 5-9 (clean exits: a checkpoint), then 10-14 (kill -9: in the segments only)."""
    base = tmp_path_factory.mktemp("checkpoints") / "store"
    rng = random.Random(SEED)
    ledger = Ledger()
    save_run(outbox_bin, base, ledger, rng, range(0, 5), "eof")
    save_run(outbox_bin, base, ledger, rng, range(5, 10), "eof")
    save_run(outbox_bin, base, ledger, rng, range(10, 15), "kill")
    assert (base / CHECKPOINT).exists(), sorted(p.name for p in base.iterdir())
    assert segments(base)[0].name == segment_name(1), "expected the log to start at seq 1"
    return base, ledger


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    lines = data.split(b"\n")
    if how == "truncated-100":
        path.write_bytes(data[:100])
    elif how == "truncated-trailer":
        path.write_bytes(data[:-10])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "flipped-header-byte":
        at = lines[0].index(b'"nextSeq":') + len(b'"nextSeq":')  # a digit: still JSON, CRC mismatch
        path.write_bytes(data[:at] + (b"7" if data[at : at + 1] != b"7" else b"8") + data[at + 1 :])
    elif how == "flipped-item-byte":
        at = len(lines[0]) + 1 + len(lines[1]) // 2  # middle of the first item line (format 1)
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :])
    elif how == "garbage-header":
        path.write_bytes(b"\xff\xfe not json\n" + b"\n".join(lines[1:]))
    elif how == "missing":
        path.unlink()
    else:
        raise AssertionError(how)


CHECKPOINT_DAMAGES = ["truncated-100", "truncated-trailer", "empty", "flipped-header-byte", "garbage-header", "missing"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", CHECKPOINT_DAMAGES)
def test_corrupt_checkpoint_is_rebuilt_from_the_segments(outbox_bin: Path, tmp_path: Path, three_runs, how: str) -> None:
    base, ledger = three_runs
    store = copy_store(base, tmp_path / "store")
    checkpoint = store / CHECKPOINT
    damage(checkpoint, how)
    damaged = checkpoint.read_bytes() if checkpoint.exists() else None

    flushed = flush_all(outbox_bin, store)
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, f"recovery={flushed.status['recovery']}\n" + "\n".join(problems)
    assert len(flushed.items) == 15
    assert not flushed.warnings("recoveredWithLoss"), flushed.status["recovery"]
    if how != "missing":
        codes = flushed.recovery_codes
        assert any("orrupt" in (c or "") for c in codes), f"no corrupt-checkpoint warning: {flushed.status['recovery']}"
        assert CHECKPOINT in flushed.stderr, f"nothing on stderr about the corrupt checkpoint: {flushed.stderr!r}"
        copies = quarantined(store, CHECKPOINT)
        assert copies and copies[0].read_bytes() == damaged, f"quarantine/ lacks the corrupt checkpoint: {copies}"


@pytest.mark.timeout(30)
def test_a_clean_exit_leaves_a_checkpoint_that_covers_everything(outbox_bin: Path, tmp_path: Path) -> None:
    """After a kill -9 (no checkpoint), a start that changes nothing still ends in a
    self-describing state: a checkpoint covering every seq and naming every segment that holds items."""
    store = tmp_path / "store"
    ledger = Ledger()
    save_run(outbox_bin, store, ledger, random.Random(SEED + 1), range(0, 5), "kill")
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode == 0, proc.stderr
    assert (store / CHECKPOINT).exists(), f"no checkpoint after a clean exit: {sorted(p.name for p in store.iterdir())}"
    header = read_checkpoint(store)
    assert header["items"] == 5 and header["nextSeq"] > max(seq for _, seq in ledger.acked.values()), header
    assert set(header["segments"]) <= {int(s.name.split(".")[1]) for s in segments(store)}, header


# ---------------------------------------------------------------------------------------------
# format 1 (snapshot.json, snapshot.prev.json, journal.*), read for the upgrade
# ---------------------------------------------------------------------------------------------


def v1_copy(tmp_path: Path) -> Path:
    store = copy_store(FIXTURE, tmp_path / "store")
    os.chmod(store, 0o700)
    return store


V1_DAMAGES = ["truncated-100", "truncated-trailer", "empty", "flipped-item-byte", "garbage-header", "missing"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", V1_DAMAGES)
def test_corrupt_v1_snapshot_falls_back_and_loses_nothing(outbox_bin: Path, tmp_path: Path, how: str) -> None:
    store = v1_copy(tmp_path)
    snapshot = store / "snapshot.json"
    damage(snapshot, how)
    damaged = snapshot.read_bytes() if snapshot.exists() else None

    flushed = flush_all(outbox_bin, store)
    assert len(flushed.items) == len(EXPECTED_V1), f"recovery={flushed.status['recovery']}"
    for got, want in zip(flushed.items, EXPECTED_V1):
        assert strict_equal(got, want), f"\n got  {got}\n want {want}"
    assert not flushed.warnings("recoveredWithLoss"), flushed.status["recovery"]
    if how != "missing":
        assert flushed.warnings("snapshotCorrupt"), f"no snapshotCorrupt warning: {flushed.status['recovery']}"
        assert "snapshot.json" in flushed.stderr, f"nothing on stderr about the corrupt snapshot: {flushed.stderr!r}"
        copies = quarantined(store, "snapshot.json")
        assert copies and copies[0].read_bytes() == damaged, f"quarantine/ lacks the corrupt snapshot: {copies}"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fallback", ["deleted", "also-corrupt"])
def test_corrupt_v1_snapshot_without_fallback_exits_1_and_deletes_nothing(outbox_bin: Path, tmp_path: Path, fallback: str) -> None:
    store = v1_copy(tmp_path)
    damage(store / "snapshot.json", "truncated-trailer")
    if fallback == "deleted":
        (store / "snapshot.prev.json").unlink()
    else:
        damage(store / "snapshot.prev.json", "flipped-item-byte")
    before = tree(store, skip=["LOCK"])

    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.decode().strip(), "no message on stderr"
    assert b'"result"' not in proc.stdout, f"served a store it could not load: {proc.stdout!r}"
    after = tree(store, skip=["LOCK"])
    missing = sorted(set(before) - set(after))
    changed = sorted(k for k in before if k in after and after[k] != before[k])
    assert not missing and not changed, f"deleted: {missing}, changed: {changed}"
    extra = sorted(k for k in set(after) - set(before) if not k.startswith("quarantine/"))
    assert not extra, f"new files outside quarantine/: {extra}"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("target", ["snapshot.json", "snapshot.prev.json", "journal"])
@pytest.mark.parametrize("version", ["99", "1.0", "1e30", "18446744073709551616"])
def test_crafted_v1_version_exits_2_and_touches_nothing(outbox_bin: Path, tmp_path: Path, target: str, version: str) -> None:
    store = v1_copy(tmp_path)
    if target == "journal":
        if not version.isdigit() or int(version) >= 1 << 32:
            pytest.skip("a binary header holds a u32")
        journal = journals_v1(store)[-1]
        data = bytearray(journal.read_bytes())
        struct.pack_into("<I", data, 8, int(version))
        journal.write_bytes(bytes(data))
    else:
        path = store / target
        text = path.read_bytes()
        assert b'"version":1,' in text.split(b"\n")[0]
        path.write_bytes(text.replace(b'"version":1,', f'"version":{version},'.encode(), 1))
    before = tree(store, skip=["LOCK"])
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = error_lines(proc.stdout)
    assert len(lines) == 1 and lines[0].get("id", "absent") is None, proc.stdout
    assert lines[0]["error"]["code"] == -32006, lines[0]
    assert tree(store, skip=["LOCK"]) == before, "files changed"
