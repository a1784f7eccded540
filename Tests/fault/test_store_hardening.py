"""The store defects of issue 9: an unsafe store directory, symlinks planted inside the store, a
missing segment or vanished checkpoint (with and without --accept-loss), crafted format versions,
negative seqs in a checkpoint with a valid CRC, and `--store ""`."""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import (
    CHECKPOINT,
    Ledger,
    Outbox,
    check_invariants,
    checkpoint_bytes,
    error_lines,
    flush_all,
    make_save,
    poll,
    read_checkpoint,
    run_once,
    save_run,
    segment_name,
    segments,
    tree,
)

SEED = 9191
STATUS = b'{"jsonrpc":"2.0","id":1,"method":"status","params":{}}\n'
VICTIM = b"victim: must never be written\n"


def refused(proc, code: int, rpc_code: int | None = None) -> dict:
    """A start-up refusal: exit `code`, a stderr message, one JSON-RPC error line with id null."""
    assert proc.returncode == code, (proc.returncode, proc.stdout[-500:], proc.stderr[-1000:])
    assert proc.stderr.decode().strip(), "no message on stderr"
    lines = error_lines(proc.stdout)
    assert len(lines) == 1, f"expected one stdout line: {proc.stdout!r}"
    err = lines[0]
    assert err.get("jsonrpc") == "2.0" and "id" in err and err["id"] is None and "error" in err, err
    if rpc_code is not None:
        assert err["error"]["code"] == rpc_code, err
    return err


def two_run_store(binary: Path, store: Path) -> Ledger:
    """Two processes' saves (clean exit, then kill -9): a checkpoint and at least two segments."""
    rng = random.Random(SEED)
    ledger = Ledger()
    save_run(binary, store, ledger, rng, range(0, 5), "eof")
    save_run(binary, store, ledger, rng, range(5, 10), "kill")
    return ledger


# ---------------------------------------------------------------------------------------------
# an unsafe store directory
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("how", ["owner-65534", "mode-0777", "mode-0770", "mode-0703"])
def test_unsafe_store_directory_is_refused(outbox_bin: Path, tmp_path: Path, how: str) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "note").write_bytes(b"x")
    if how.startswith("owner"):
        if os.geteuid() != 0:
            pytest.skip("chown needs root")
        os.chown(store, 65534, 65534)
    else:
        os.chmod(store, int(how.split("-")[1], 8))
    before = tree(store)
    proc = run_once(outbox_bin, store, input=STATUS)
    refused(proc, 1)
    assert str(store) in proc.stderr.decode(), proc.stderr
    assert tree(store) == before and not (store / "LOCK").exists(), sorted(tree(store))


@pytest.mark.timeout(30)
def test_a_safe_existing_directory_is_used(outbox_bin: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o755)
    os.chmod(store, 0o755)  # readable by others, writable by the owner only: fine
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode == 0 and b'"result"' in proc.stdout, (proc.stdout, proc.stderr)


# ---------------------------------------------------------------------------------------------
# planted symlinks
# ---------------------------------------------------------------------------------------------


def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_bytes(VICTIM)
    os.chmod(path, 0o600)
    return path


def victim_intact(path: Path) -> None:
    assert path.exists() and not path.is_symlink(), "the victim is gone"
    assert path.read_bytes() == VICTIM, f"the victim was written through a symlink: {path.read_bytes()[:200]!r}"
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_lock_symlink_is_not_followed(outbox_bin: Path, tmp_path: Path, target: str) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    v = victim(tmp_path)
    dangling = tmp_path / "created-through-link"
    (store / "LOCK").symlink_to(v if target == "existing" else dangling)
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    victim_intact(v)
    assert not dangling.exists(), "a file was created through the LOCK symlink"
    if proc.returncode != 0:
        refused(proc, proc.returncode)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("when", ["before-start", "while-running"])
def test_next_segment_symlink_is_not_followed(outbox_bin: Path, tmp_path: Path, when: str) -> None:
    store = tmp_path / "store"
    ledger = two_run_store(outbox_bin, store)
    v = victim(tmp_path)
    next_seq = read_checkpoint(store)["nextSeq"] if (store / CHECKPOINT).exists() else 1

    def plant(first: int) -> list[Path]:
        links = []
        for seq in range(first, first + 60):
            link = store / segment_name(seq)
            if not link.exists() and not link.is_symlink():
                link.symlink_to(v)
                links.append(link)
        return links

    links = plant(max(next_seq - 5, 1)) if when == "before-start" else []
    rng = random.Random(SEED + 1)
    ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval="0.05")
    try:
        ob.send({"jsonrpc": "2.0", "id": "st", "method": "status", "params": {}})
        with ob.cond:
            ob.cond.wait_for(lambda: "st" in ob.by_id or ob.eof or bool(ob.lines), 15)
        if "st" in ob.by_id:
            if when == "while-running":
                links = plant(max(next_seq - 5, 1))
            for n in range(10, 30):  # one burst each, across several snapshots (segment rotations)
                ob.send(ledger.record(n, n, *make_save(rng, n)))
                ledger.absorb(ob.wait_ids([n]))
            ob.close(expect=None)
        else:  # refusing a store with a symlink among its segments is fine, with the usual error line
            ob.close(expect=1)
            assert len(ob.lines) == 1 and ob.lines[0].get("id", "absent") is None and "error" in ob.lines[0], ob.lines
        assert ob.proc.returncode >= 0, f"killed by signal {-ob.proc.returncode}: {ob.stderr[-1000:]}"
    finally:
        ob.ensure_dead()
    victim_intact(v)
    for link in links:
        if link.is_symlink():
            link.unlink()
    flushed = flush_all(outbox_bin, store, "--accept-loss")
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, "\n".join(problems)


@pytest.mark.timeout(30)
def test_temp_file_symlink_is_not_followed(outbox_bin: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    v = victim(tmp_path)
    ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval="0.05")
    try:
        ob.result("status")
        for name in (f"{CHECKPOINT}.tmp.{ob.pid}", f"{CHECKPOINT}.tmp", f"{CHECKPOINT}.tmp.{ob.pid + 1}"):
            (store / name).symlink_to(v)
        saved = [ob.result("saveCustomEvent", {"name": "e", "properties": {"n": n}, "user": {"externalId": f"u{n}"}}) for n in range(5)]
        # The temp names of segment rewrites too; a drain makes compaction rewrite the segment.
        for seg in segments(store):
            (store / f"{seg.name}.tmp.{ob.pid}").symlink_to(v)
        drained = ob.result("flushPending", {"max": 2})["items"]
        poll(lambda: False, 0.5)  # several snapshot intervals pass with the links in place
        ob.close(expect=None)
        assert ob.proc.returncode >= 0, ob.stderr[-1000:]
    finally:
        ob.ensure_dead()
    victim_intact(v)
    for p in list(store.iterdir()):
        if p.is_symlink():
            p.unlink()
    flushed = flush_all(outbox_bin, store)
    assert [it["id"] for it in drained] == [s["id"] for s in saved[:2]]
    assert sorted((it["id"], it["seq"]) for it in flushed.items) == sorted((s["id"], s["seq"]) for s in saved[2:])


# ---------------------------------------------------------------------------------------------
# missing segments, a vanished checkpoint
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("gap", ["listed-segment-missing", "checkpoint-and-first-segment-gone"])
def test_missing_data_refuses_the_start_unless_accepted(outbox_bin: Path, tmp_path: Path, gap: str) -> None:
    base = tmp_path / "base"
    ledger = two_run_store(outbox_bin, base)
    segs = segments(base)
    assert len(segs) >= 2 and segs[0].name == segment_name(1), [s.name for s in segs]
    if gap == "listed-segment-missing":
        listed = read_checkpoint(base)["segments"]
        assert listed, "the checkpoint lists no segment"
        (base / segment_name(listed[0])).unlink()
    else:
        (base / CHECKPOINT).unlink()
        segs[0].unlink()
    store = tmp_path / "store"
    shutil.copytree(base, store)
    before = tree(store, skip=["LOCK"])
    proc = run_once(outbox_bin, store, input=STATUS)
    err = refused(proc, 1)
    assert "--accept-loss" in proc.stderr.decode() + json.dumps(err), "the message does not say how to go on"
    after = tree(store, skip=["LOCK"])
    assert {k: v for k, v in after.items() if not k.startswith("quarantine/")} == before, "files changed"

    flushed = flush_all(outbox_bin, store, "--accept-loss")
    losses = flushed.warnings("recoveredWithLoss")
    assert losses, f"no recoveredWithLoss: {flushed.status['recovery']}"
    assert any(w.get("fromSeq") == 1 for w in losses), losses
    remaining = {it["seq"] for it in flushed.items}
    assert remaining, "nothing recovered from the segments that are left"
    lost_ns = {n for n, (_, seq) in ledger.acked.items() if seq not in remaining}
    kept = Ledger()
    kept.sent = ledger.sent
    kept.acked = {n: v for n, v in ledger.acked.items() if n not in lost_ns}
    lost, problems = check_invariants(flushed.items, kept)
    assert not problems, "\n".join(problems)
    assert all(any(w["fromSeq"] <= ledger.acked[n][1] <= (w.get("toSeq") or 1 << 62) for w in losses) for n in lost_ns)
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode == 0, f"the loss was accepted once; the next start is refused again: {proc.stderr!r}"


# ---------------------------------------------------------------------------------------------
# crafted versions and seqs
# ---------------------------------------------------------------------------------------------

CRAFTED = ["2.0", "1e30", "18446744073709551616", "3", "-2", "0", '"2"']


@pytest.mark.timeout(30)
@pytest.mark.parametrize("version", CRAFTED)
def test_crafted_checkpoint_version_exits_2_and_touches_nothing(outbox_bin: Path, tmp_path: Path, version: str) -> None:
    store = tmp_path / "store"
    two_run_store(outbox_bin, store)
    line = (store / CHECKPOINT).read_bytes().split(b"\n")[0]
    assert b'"version":2,' in line
    (store / CHECKPOINT).write_bytes(checkpoint_bytes(line.replace(b'"version":2,', f'"version":{version},'.encode(), 1)))
    before = tree(store, skip=["LOCK"])
    proc = run_once(outbox_bin, store, input=STATUS)
    refused(proc, 2, -32006)
    assert tree(store, skip=["LOCK"]) == before, "files changed"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("version", [3, 0, 0xFFFFFFFF, 1 << 16])
def test_crafted_segment_version_exits_2_and_touches_nothing(outbox_bin: Path, tmp_path: Path, version: int) -> None:
    store = tmp_path / "store"
    two_run_store(outbox_bin, store)
    seg = segments(store)[-1]
    data = bytearray(seg.read_bytes())
    struct.pack_into("<I", data, 8, version)
    seg.write_bytes(bytes(data))
    before = tree(store, skip=["LOCK"])
    proc = run_once(outbox_bin, store, input=STATUS)
    refused(proc, 2, -32006)
    assert tree(store, skip=["LOCK"]) == before, "files changed"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("field", ["coversSeq", "nextSeq", "firstSeq"])
def test_negative_seq_in_a_checkpoint_with_a_valid_crc_is_corrupt_not_a_crash(outbox_bin: Path, tmp_path: Path, field: str) -> None:
    store = tmp_path / "store"
    ledger = two_run_store(outbox_bin, store)
    header = json.loads((store / CHECKPOINT).read_bytes().split(b"\n")[0])
    header[field] = -5
    (store / CHECKPOINT).write_bytes(checkpoint_bytes(json.dumps(header, separators=(",", ":")).encode()))
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode in (0, 1), f"exit {proc.returncode}: {proc.stderr[-1000:]!r}"
    if proc.returncode == 1:
        refused(proc, 1)
        return
    status = json.loads(proc.stdout.splitlines()[0])["result"]
    assert status["recovery"], f"a corrupt checkpoint was accepted silently: {status}"
    flushed = flush_all(outbox_bin, store)
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, "\n".join(problems)


@pytest.mark.timeout(30)
def test_empty_store_path_is_a_usage_error(outbox_bin: Path, tmp_path: Path) -> None:
    root_lock_before = os.path.lexists("/LOCK")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSH_OUTBOX_")}
    proc = subprocess.run([str(outbox_bin), "--store", ""], input=STATUS, capture_output=True, timeout=10, cwd=tmp_path, env=env)
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.decode().strip()
    assert b'"result"' not in proc.stdout
    if not root_lock_before:
        assert not os.path.lexists("/LOCK"), "--store '' created /LOCK"
    assert not (tmp_path / "LOCK").exists(), "--store '' used the working directory"


@pytest.mark.timeout(30)
def test_quarantine_symlink_is_not_followed(outbox_bin: Path, tmp_path: Path) -> None:
    """A planted `quarantine -> elsewhere` directory link: copies of damaged files must not land
    outside the store."""
    store = tmp_path / "store"
    two_run_store(outbox_bin, store)
    seg = segments(store)[0]
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (store / "quarantine").symlink_to(elsewhere, target_is_directory=True)
    proc = run_once(outbox_bin, store, input=STATUS)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert not list(elsewhere.iterdir()), f"files written through the quarantine link: {list(elsewhere.iterdir())}"
    if proc.returncode != 0:
        refused(proc, proc.returncode)
