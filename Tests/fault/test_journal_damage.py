"""Damaged log segments (format 2, `segment.*`): a torn last record cut at every byte, a flipped byte
mid-segment (quarantine, recoveredWithLoss naming the lost seq range, every other record kept), a
zero-filled tail, and a segment or checkpoint from a newer format version."""

from __future__ import annotations

import random
import shutil
import struct
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import (
    CHECKPOINT,
    ITEM,
    checkpoint_bytes,
    Ledger,
    Outbox,
    check_invariants,
    error_lines,
    flush_all,
    make_save,
    quarantined,
    read_segment,
    run_once,
    save_run,
    segments,
    tree,
)

SEED = 4242
SEGMENT = "segment.00000000000000000001"


def build_journal_only_store(binary: Path, store: Path, count: int, seed: int = SEED, small_last: bool = False) -> Ledger:
    """`count` acknowledged saves (one burst each), then kill -9: with --snapshot-interval 3600
    there is no snapshot, so the single journal segment is the only record of them."""
    rng = random.Random(seed)
    ledger = Ledger()
    ob = Outbox(binary, store, fsync="always", snapshot_interval=3600)
    try:
        for n in range(count):
            method, params = make_save(rng, n)
            if small_last and n == count - 1:
                method, params = "saveCustomEvent", {"name": "last", "properties": {"n": n, "b": True}, "user": {"externalId": f"n{n}"}}
            ob.send(ledger.record(n, n, method, params))
            ledger.absorb(ob.wait_ids([n]))
        ob.kill9()
    finally:
        ob.ensure_dead()
    assert len(ledger.acked) == count and not ledger.errors
    segs = segments(store)
    assert [s.name for s in segs] == [SEGMENT], segs
    records = read_segment(segs[0])
    assert [r.seq for r in records] == list(range(1, count + 1)) and all(r.type == ITEM for r in records)
    return ledger


def without(ledger: Ledger, ns: set[int]) -> Ledger:
    """The ledger minus saves whose records the test itself destroyed."""
    out = Ledger()
    out.sent = dict(ledger.sent)
    out.acked = {n: v for n, v in ledger.acked.items() if n not in ns}
    return out


# ---------------------------------------------------------------------------------------------
# 3. torn last record, cut at every byte offset
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(90)
def test_journal_truncated_at_every_byte_of_its_last_record(outbox_bin: Path, tmp_path: Path) -> None:
    base = tmp_path / "base"
    count = 4
    ledger = build_journal_only_store(outbox_bin, base, count, small_last=True)
    segment_name = SEGMENT
    last = read_segment(base / segment_name)[-1]
    original = (base / segment_name).read_bytes()
    assert last.end == len(original)
    expected = without(ledger, {count - 1})
    torn_n = count - 1

    def one_cut(cut: int) -> list[str]:
        store = tmp_path / f"cut{cut}"
        shutil.copytree(base, store)
        journal = store / segment_name
        with open(journal, "r+b") as f:
            f.truncate(cut)
        damaged = journal.read_bytes()
        sizes_while_running: list[int] = []

        def check(ob: Outbox) -> None:
            sizes_while_running.append(journal.stat().st_size)

        flushed = flush_all(outbox_bin, store, "--snapshot-interval", "3600", check=check)
        problems = []
        lost, why = check_invariants(flushed.items, expected)
        problems += why
        if any(it["user"]["externalId"] == f"n{torn_n}" for it in flushed.items):
            problems.append("the torn record was replayed")
        if len(flushed.items) != count - 1:
            problems.append(f"{len(flushed.items)} items recovered, expected {count - 1}")
        torn = flushed.warnings("tornTail")
        copies = quarantined(store, segment_name)
        if flushed.warnings("recoveredWithLoss"):
            problems.append(f"recoveredWithLoss for a torn tail: {flushed.status['recovery']}")
        if cut > last.offset:
            if len(torn) != 1:
                problems.append(f"status.recovery lacks tornTail: {flushed.status['recovery']}")
            if sizes_while_running != [last.offset]:
                problems.append(f"journal not cut back to {last.offset}: {sizes_while_running}")
            if len(copies) != 1 or copies[0].read_bytes() != damaged:
                problems.append(f"quarantine/ does not hold the torn segment as found: {copies}")
        else:
            if torn:
                problems.append(f"tornTail reported for a clean end: {torn}")
            if sizes_while_running != [len(damaged)]:
                problems.append(f"clean journal changed size: {sizes_while_running}")
        shutil.rmtree(store)
        return [f"cut at byte {cut} (record {last.offset}..{last.end}): {p}" for p in problems]

    cuts = list(range(last.offset, last.end))
    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = [p for result in pool.map(one_cut, cuts) for p in result]
    assert len(cuts) > 17
    assert not problems, "\n".join(problems[:20])


# ---------------------------------------------------------------------------------------------
# 4. a flipped byte in the middle of a segment (not its last record)
# ---------------------------------------------------------------------------------------------

DAMAGE = {
    # name -> (offset within the damaged record, new byte or None to xor 0xFF)
    "payload": ("middle", None),
    "crc": (4, None),
    "type": (8, None),
    "seq": (9, None),
    "length": (2, None),  # the length is not covered by the CRC: +N*65536 runs past the end of the file
    "zeroed-header": (0, 0),  # a zeroed block in the middle (lost page): 17 zero bytes over a record header
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("where", list(DAMAGE))
def test_flipped_byte_mid_segment_reports_loss_and_keeps_the_rest(outbox_bin: Path, tmp_path: Path, where: str) -> None:
    store = tmp_path / "store"
    count = 10
    ledger = build_journal_only_store(outbox_bin, store, count)
    segment = store / SEGMENT
    records = read_segment(segment)
    data = bytearray(segment.read_bytes())
    if where == "payload":
        # The byte in the middle of the file, as in durability.md F5; it must not be in the last record.
        at = len(data) // 2
        victim = next(r for r in records if r.offset <= at < r.end)
        if at < victim.offset + 17:
            at = victim.offset + 17 + (victim.end - victim.offset - 17) // 2
    else:
        victim = records[4]
        at = victim.offset + DAMAGE[where][0]
    assert victim is not records[-1]
    if DAMAGE[where][1] == 0:
        data[at : at + 17] = bytes(17)
    else:
        data[at] ^= 0xFF
    segment.write_bytes(bytes(data))
    damaged = bytes(data)
    index = records.index(victim)  # save n=index wrote the damaged record

    # Restart: serves, reports, accepts new saves, and exits 0.
    ob = Outbox(outbox_bin, store, "--snapshot-interval", "3600")
    try:
        status = ob.result("status")
        new = ob.result("saveCustomEvent", {"name": "after_damage", "properties": {"k": 1}})
        assert isinstance(new["seq"], int)
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    losses = [w for w in status["recovery"] if w.get("code") == "recoveredWithLoss"]
    assert len(losses) == 1, f"damage at byte {at} ({where} of seq {victim.seq}): status.recovery={status['recovery']}"
    loss = losses[0]
    assert loss.get("fromSeq") == victim.seq, loss
    assert loss.get("toSeq") == victim.seq, f"the next record is intact, so only seq {victim.seq} is lost: {loss}"
    copies = quarantined(store, segment.name)
    assert copies and copies[0].read_bytes() == damaged, f"quarantine/ lacks the damaged segment: {copies}"

    flushed = flush_all(outbox_bin, store)
    before = [it for it in flushed.items if it.get("name") != "after_damage"]
    lost, problems = check_invariants(before, without(ledger, {index}))
    assert not problems, "\n".join(problems)
    assert sorted(it["seq"] for it in before) == [r.seq for r in records if r is not victim], "records after the damage were not kept"
    assert [it["name"] for it in flushed.items if it.get("name") == "after_damage"] == ["after_damage"]


def lost_range(flushed) -> set[int]:
    """The seqs that the recoveredWithLoss reports cover."""
    out: set[int] = set()
    for w in flushed.warnings("recoveredWithLoss"):
        out |= set(range(w["fromSeq"], (w["toSeq"] if w.get("toSeq") is not None else 1 << 20) + 1))
    return out


@pytest.mark.timeout(30)
def test_saves_after_a_recovery_with_loss_survive_the_next_crash(outbox_bin: Path, tmp_path: Path) -> None:
    """The damaged segment stays in place after recovery; saves acknowledged afterwards must not be
    hidden behind it when the process is killed again before any snapshot."""
    store = tmp_path / "store"
    ledger = build_journal_only_store(outbox_bin, store, 6)
    segment = store / SEGMENT
    victim = read_segment(segment)[2]
    data = bytearray(segment.read_bytes())
    data[victim.end - 3] ^= 0xFF
    segment.write_bytes(bytes(data))

    rng = random.Random(SEED + 7)
    ob = Outbox(outbox_bin, store, fsync="always", snapshot_interval=3600)
    try:
        assert [w["code"] for w in ob.result("status")["recovery"]] == ["recoveredWithLoss"]
        for n in range(100, 105):
            ob.send(ledger.record(n, n, *make_save(rng, n)))
            ledger.absorb(ob.wait_ids([n]))
        ob.kill9()
    finally:
        ob.ensure_dead()
    assert not ledger.errors

    flushed = flush_all(outbox_bin, store)
    lost, problems = check_invariants(flushed.items, without(ledger, {2}))
    assert lost == 0 and not problems, (
        f"{lost} saves acknowledged after the first recovery were lost on the second one; "
        f"files={sorted(p.name for p in store.iterdir())}; recovery={flushed.status['recovery']}\n" + "\n".join(problems)
    )


@pytest.mark.timeout(30)
def test_loss_report_names_the_seqs_not_applied(outbox_bin: Path, tmp_path: Path) -> None:
    """Two crashed runs; the oldest segment is damaged at its third record. The report must name
    seq 3, and every acknowledged save outside the reported range must come back."""
    store = tmp_path / "store"
    rng = random.Random(SEED + 11)
    ledger = Ledger()
    save_run(outbox_bin, store, ledger, rng, range(0, 5), "kill")
    save_run(outbox_bin, store, ledger, rng, range(5, 10), "kill")
    first = segments(store)[0]
    assert first.name == SEGMENT, segments(store)
    victim = read_segment(first)[2]
    assert victim.seq == 3
    data = bytearray(first.read_bytes())
    data[victim.end - 2] ^= 0xFF
    first.write_bytes(bytes(data))

    flushed = flush_all(outbox_bin, store)
    losses = flushed.warnings("recoveredWithLoss")
    assert len(losses) == 1, flushed.status["recovery"]
    assert losses[0].get("fromSeq") == 3, f"first seq not applied is 3: {losses[0]}"
    gone = lost_range(flushed)
    assert 3 in gone
    lost, problems = check_invariants(flushed.items, without(ledger, {n for n, (_, seq) in ledger.acked.items() if seq in gone}))
    assert lost == 0 and not problems, "\n".join(problems)
    assert len(flushed.items) >= 9 - len(gone & set(range(4, 11))), flushed.status["recovery"]


# ---------------------------------------------------------------------------------------------
# 5. zero-filled tail
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("zeros", [1, 16, 17, 100, 4096])
def test_zero_filled_tail_is_recovered_fully(outbox_bin: Path, tmp_path: Path, zeros: int) -> None:
    store = tmp_path / "store"
    ledger = build_journal_only_store(outbox_bin, store, 5, seed=SEED + zeros)
    segment = store / SEGMENT
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(b"\0" * zeros)
    sizes: list[int] = []
    flushed = flush_all(outbox_bin, store, check=lambda ob: sizes.append(segment.stat().st_size))
    lost, problems = check_invariants(flushed.items, ledger)
    assert lost == 0 and not problems, "\n".join(problems)
    assert len(flushed.items) == 5
    assert not flushed.warnings("recoveredWithLoss"), flushed.status["recovery"]
    assert not flushed.warnings("snapshotCorrupt"), flushed.status["recovery"]
    assert sizes == [size], f"the zero tail was not cut off: {sizes} vs {size}"
    assert not any(b"\0" in str(it).encode() for it in flushed.items)


# ---------------------------------------------------------------------------------------------
# 10. a newer format version
# ---------------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("target", ["segment", "checkpoint"])
def test_newer_format_version_is_refused_and_untouched(outbox_bin: Path, tmp_path: Path, target: str) -> None:
    store = tmp_path / "store"
    build_journal_only_store(outbox_bin, store, 3)
    if target == "segment":
        segment = store / SEGMENT
        data = bytearray(segment.read_bytes())
        struct.pack_into("<I", data, 8, 99)
        segment.write_bytes(bytes(data))
    else:
        # A clean run writes a checkpoint; then its header (with a valid CRC) claims version 99.
        ob = Outbox(outbox_bin, store)
        ob.result("saveCustomEvent", {"name": "y"})
        ob.close(expect=0)
        line = (store / CHECKPOINT).read_bytes().split(b"\n")[0]
        assert b'"version":2,' in line
        (store / CHECKPOINT).write_bytes(checkpoint_bytes(line.replace(b'"version":2,', b'"version":99,', 1)))
    before = tree(store, skip=["LOCK"])

    proc = run_once(
        outbox_bin, store, input=b'{"jsonrpc":"2.0","id":1,"method":"saveCustomEvent","params":{"name":"x"}}\n'
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = error_lines(proc.stdout)
    assert len(lines) == 1, proc.stdout
    err = lines[0]
    assert err.get("id", "absent") is None and err["error"]["code"] == -32006, err
    assert err["error"]["data"]["version"] == 99, err
    assert proc.stderr.decode().strip(), "no stderr message"
    after = tree(store, skip=["LOCK"])
    assert after == before, f"files changed: {sorted(set(after) ^ set(before))} or contents differ"


@pytest.mark.timeout(30)
def test_torn_older_segment_is_loss_not_a_torn_tail(outbox_bin: Path, tmp_path: Path) -> None:
    """Only the newest segment can have a torn tail from a crash. An older segment cut short inside
    its last record is damage: quarantined, reported as recoveredWithLoss for that record's seq, and
    every record of the newer segment is kept."""
    store = tmp_path / "store"
    rng = random.Random(SEED + 21)
    ledger = Ledger()
    save_run(outbox_bin, store, ledger, rng, range(0, 5), "kill")
    save_run(outbox_bin, store, ledger, rng, range(5, 10), "kill")
    segs = segments(store)
    assert len(segs) >= 2 and segs[0].name == SEGMENT, segs
    older = segs[0]
    last = [r for r in read_segment(older) if r.type == ITEM][-1]
    with open(older, "r+b") as f:
        f.truncate(last.offset + (last.end - last.offset) // 2)
    damaged = older.read_bytes()
    later = {r.seq for s in segs[1:] for r in read_segment(s) if r.type == ITEM}

    flushed = flush_all(outbox_bin, store)
    losses = flushed.warnings("recoveredWithLoss")
    assert len(losses) == 1 and losses[0].get("fromSeq") == last.seq, flushed.status["recovery"]
    copies = quarantined(store, older.name)
    assert copies and copies[0].read_bytes() == damaged, f"quarantine/ lacks the damaged segment: {copies}"
    gone = lost_range(flushed)
    lost, problems = check_invariants(flushed.items, without(ledger, {n for n, (_, seq) in ledger.acked.items() if seq in gone}))
    assert lost == 0 and not problems, "\n".join(problems)
    assert later <= {it["seq"] for it in flushed.items}, "records of the newer segment were dropped"
