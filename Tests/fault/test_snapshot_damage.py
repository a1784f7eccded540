"""A truncated or corrupt snapshot.json: with snapshot.prev.json and the journal present, every
acknowledged save comes back; with no fallback, startup fails loudly (exit 1) and deletes nothing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from conftest import Ledger, check_invariants, copy_store, flush_all, quarantined, run_once, save_run, segments, tree

SEED = 606


@pytest.fixture(scope="module")
def three_generations(outbox_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ledger]:
    """snapshot.prev.json (saves 0-4), snapshot.json (saves 0-9), and saves 10-14 in the journal only
    (the last run was killed). journal.1 has been compacted away."""
    base = tmp_path_factory.mktemp("snapshots") / "store"
    rng = random.Random(SEED)
    ledger = Ledger()
    save_run(outbox_bin, base, ledger, rng, range(0, 5), "eof")
    save_run(outbox_bin, base, ledger, rng, range(5, 10), "eof")
    save_run(outbox_bin, base, ledger, rng, range(10, 15), "kill")
    assert (base / "snapshot.json").exists() and (base / "snapshot.prev.json").exists()
    assert not (base / "journal.00000000000000000001").exists(), "expected journal.1 compacted away"
    assert segments(base), "no journal"
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
    elif how == "flipped-item-byte":
        at = len(lines[0]) + 1 + len(lines[1]) // 2  # middle of the first item line
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :])
    elif how == "garbage-header":
        path.write_bytes(b"\xff\xfe not json\n" + b"\n".join(lines[1:]))
    elif how == "missing":
        path.unlink()
    else:
        raise AssertionError(how)


DAMAGES = ["truncated-100", "truncated-trailer", "empty", "flipped-item-byte", "garbage-header", "missing"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", DAMAGES)
def test_corrupt_snapshot_falls_back_and_loses_nothing(outbox_bin: Path, tmp_path: Path, three_generations, how: str) -> None:
    base, ledger = three_generations
    store = copy_store(base, tmp_path / "store")
    snapshot = store / "snapshot.json"
    damage(snapshot, how)
    damaged = snapshot.read_bytes() if snapshot.exists() else None

    flushed = flush_all(outbox_bin, store)
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, f"recovery={flushed.status['recovery']}\n" + "\n".join(problems)
    assert len(flushed.items) == 15
    assert not flushed.warnings("recoveredWithLoss"), flushed.status["recovery"]
    if how != "missing":
        assert flushed.warnings("snapshotCorrupt"), f"no snapshotCorrupt warning: {flushed.status['recovery']}"
        assert "snapshot.json" in flushed.stderr, f"nothing on stderr about the corrupt snapshot: {flushed.stderr!r}"
        copies = quarantined(store, "snapshot.json")
        assert copies and copies[0].read_bytes() == damaged, f"quarantine/ lacks the corrupt snapshot: {copies}"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fallback", ["deleted", "also-corrupt"])
def test_corrupt_snapshot_without_fallback_exits_1_and_deletes_nothing(
    outbox_bin: Path, tmp_path: Path, three_generations, fallback: str
) -> None:
    base, _ = three_generations
    store = copy_store(base, tmp_path / "store")
    damage(store / "snapshot.json", "truncated-trailer")
    if fallback == "deleted":
        (store / "snapshot.prev.json").unlink()
    else:
        damage(store / "snapshot.prev.json", "flipped-item-byte")
    before = tree(store, skip=["LOCK"])

    proc = run_once(outbox_bin, store, input=b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n')
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.decode().strip(), "no message on stderr"
    assert b'"result"' not in proc.stdout, f"served a store it could not load: {proc.stdout!r}"
    after = tree(store, skip=["LOCK"])
    missing = sorted(set(before) - set(after))
    changed = sorted(k for k in before if k in after and after[k] != before[k])
    assert not missing and not changed, f"deleted: {missing}, changed: {changed}"
    extra = sorted(k for k in set(after) - set(before) if not k.startswith("quarantine/"))
    assert not extra, f"new files outside quarantine/: {extra}"
