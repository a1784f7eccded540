"""Crafted segment records with a valid CRC-32C (issue 9: hostile files): fields out of range, a
short payload, an unknown type, a body that is not JSON. Start-up never crashes, stdout stays valid
JSON-RPC, and every acknowledged save before the crafted record comes back."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest

from conftest import ITEM, REMOVE, Ledger, Outbox, check_invariants, crc32c, item_payload, read_segment, save_run, segments

SEED = 5150
CRAFTED_ID = bytes(range(0xA0, 0xB0))  # an id no real item has; rendered as below
CRAFTED_TEXT = "a7a6a5a4-a3a2-a1a0-afae-adacabaaa9a8"


def record(rtype: int, seq: int, payload: bytes) -> bytes:
    body = bytes([rtype]) + struct.pack("<Q", seq) + payload
    return struct.pack("<II", len(payload), crc32c(body)) + body


def item(saved_at: int, deliveries: int, kind: int, flags: int, id_length: int, rest: bytes) -> bytes:
    return struct.pack("<qIBBB", saved_at, deliveries, kind, flags, id_length) + rest


def crafted(template: dict, next_seq: int) -> dict[str, bytes]:
    """name -> record bytes, built from a real item's fields."""
    t = template
    uid = CRAFTED_ID
    body = t["body"]
    return {
        "short-item": record(ITEM, next_seq, b"\x01\x02\x03"),
        "kind-200": record(ITEM, next_seq, item(t["savedAt"], 0, 200, t["flags"], 0, uid + body)),
        "id-length-past-end": record(ITEM, next_seq, item(t["savedAt"], 0, t["kind"], t["flags"], 250, b"abc")),
        "body-not-json": record(ITEM, next_seq, item(t["savedAt"], 0, t["kind"], t["flags"], 0, uid + b'{"name":\n"x')),
        "body-empty": record(ITEM, next_seq, item(t["savedAt"], 0, t["kind"], t["flags"], 0, uid)),
        "saved-at-extreme": record(ITEM, next_seq, item(-(1 << 63), 0, t["kind"], t["flags"], 0, uid + body)),
        "delivery-count-max": record(ITEM, next_seq, item(t["savedAt"], 0xFFFFFFFF, t["kind"], t["flags"], 0, uid + body)),
        "seq-max": record(ITEM, (1 << 64) - 1, item(t["savedAt"], 0, t["kind"], t["flags"], 0, uid + body)),
        "seq-zero": record(ITEM, 0, item(t["savedAt"], 0, t["kind"], t["flags"], 0, uid + body)),
        "remove-count-huge": record(REMOVE, next_seq, struct.pack("<I", 0xFFFFFFFF) + struct.pack("<Q", 1)),
        "unknown-type": record(99, next_seq, b"\x00" * 8),
    }


@pytest.fixture(scope="module")
def base(outbox_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ledger]:
    store = tmp_path_factory.mktemp("crafted") / "store"
    ledger = Ledger()
    save_run(outbox_bin, store, ledger, random.Random(SEED), range(0, 6), "kill")
    return store, ledger


NAMES = list(crafted({"id": bytes(16), "body": b"{}", "savedAt": 0, "kind": 0, "flags": 0}, 1))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", NAMES)
def test_crafted_record_with_a_valid_crc_never_crashes(outbox_bin: Path, tmp_path: Path, base, name: str) -> None:
    src, ledger = base
    store = tmp_path / "store"
    shutil.copytree(src, store)
    seg = segments(store)[-1]
    records = read_segment(seg)
    template = item_payload(next(r for r in records if r.type == ITEM))
    next_seq = max(r.seq for s in segments(store) for r in read_segment(s)) + 1
    with open(seg, "ab") as f:
        f.write(crafted(template, next_seq)[name])

    ob = Outbox(outbox_bin, store)
    try:
        ob.send({"jsonrpc": "2.0", "id": "s", "method": "status", "params": {}})
        with ob.cond:
            ob.cond.wait_for(lambda: "s" in ob.by_id or ob.eof, 20)
        if "s" in ob.by_id:
            drained = []
            for _ in range(10):
                try:
                    res = ob.call("flushPending", {"max": 1000}, timeout=20)
                except AssertionError as error:
                    raise AssertionError(f"{error}; unparsable stdout: {ob.bad_lines[:1]!r}") from None
                assert "result" in res, res
                drained += res["result"]["items"]
                if res["result"]["remaining"] == 0:
                    break
            # A body that is not JSON is found when it would first be written out, and dropped then.
            later = ob.call("status", {}, timeout=20)
        ob.close(expect=None)
    finally:
        ob.ensure_dead()
    rc = ob.proc.returncode
    assert rc >= 0, f"killed by signal {-rc}: {ob.stderr[-1500:]!r}"
    assert not ob.bad_lines and not ob.partial, f"stdout is not JSON-RPC: {(ob.bad_lines or [ob.partial])[0][:300]!r}"
    if rc != 0:
        assert len(ob.lines) == 1 and ob.lines[0].get("id", "absent") is None and "error" in ob.lines[0], ob.lines
        assert ob.stderr.strip(), "refused without a message"
        return
    status = ob.by_id["s"]["result"]
    ours = [it for it in drained if it["id"] != CRAFTED_TEXT]
    lost, problems = check_invariants(ours, ledger)
    assert lost == 0 and not problems, "\n".join(problems)
    extra = [it for it in drained if it not in ours]
    if extra:  # a crafted record that is a well-formed item may be served as one
        for it in extra:
            assert it["kind"] in ("customEvent", "customAttribute", "userAttribute"), it
    elif name not in ("seq-zero",):
        recovery = status["recovery"] + later["result"]["recovery"]
        assert recovery, f"the crafted record was dropped silently: {status}"


BIG = 9223372036854775807
CHECKPOINT_FIELDS = {
    "nextSeq-int64-max": {"nextSeq": BIG, "coversSeq": BIG - 1},
    "coversSeq-past-nextSeq": {"coversSeq": BIG},
    "firstSeq-past-nextSeq": {"firstSeq": BIG},
    "items-negative": {"items": -1},
    "segments-negative": {"segments": [-1]},
    "segments-float": {"segments": [1e30]},
    "lease-expires-int64-max": {"leases": [{"flushId": "f", "expiresAt": BIG, "seqs": [1], "note": ""}]},
    "lease-expires-int64-min": {"leases": [{"flushId": "f", "expiresAt": -BIG - 1, "seqs": [1], "note": ""}]},
    "lease-seq-unknown": {"leases": [{"flushId": "f", "expiresAt": 4102444800000, "seqs": [BIG], "note": ""}]},
    "createdAt-garbage": {"createdAt": "yesterday"},
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", list(CHECKPOINT_FIELDS))
def test_crafted_checkpoint_fields_with_a_valid_crc_never_crash(outbox_bin: Path, tmp_path: Path, name: str) -> None:
    import json

    from conftest import CHECKPOINT, checkpoint_bytes

    store = tmp_path / "store"
    ledger = Ledger()
    save_run(outbox_bin, store, ledger, random.Random(SEED + 1), range(0, 4), "eof")
    header = json.loads((store / CHECKPOINT).read_bytes().split(b"\n")[0])
    header.update(CHECKPOINT_FIELDS[name])
    (store / CHECKPOINT).write_bytes(checkpoint_bytes(json.dumps(header, separators=(",", ":")).encode()))

    ob = Outbox(outbox_bin, store)
    try:
        ob.send({"jsonrpc": "2.0", "id": "s", "method": "status", "params": {}})
        with ob.cond:
            ob.cond.wait_for(lambda: "s" in ob.by_id or ob.eof, 20)
        if "s" in ob.by_id:
            saved = ob.call("saveCustomEvent", {"name": "after", "user": {"externalId": "after"}})
            assert "result" in saved or saved.get("error", {}).get("code") == -32003, saved
            drained = ob.call("flushPending", {"max": 100})
            assert "result" in drained, drained
        ob.close(expect=None)
    finally:
        ob.ensure_dead()
    rc = ob.proc.returncode
    assert rc >= 0, f"killed by signal {-rc}: {ob.stderr[-1500:]!r}"
    assert not ob.bad_lines and not ob.partial, f"stdout is not JSON-RPC: {(ob.bad_lines or [ob.partial])[0][:300]!r}"
    if rc != 0:
        assert rc in (1, 2) and ob.stderr.strip(), (rc, ob.stderr)
        assert len(ob.lines) == 1 and ob.lines[0].get("id", "absent") is None and "error" in ob.lines[0], ob.lines
        return
    items = [it for it in drained["result"]["items"] if it["id"] != CRAFTED_TEXT and it.get("name") != "after"]
    if name == "lease-expires-int64-max":  # a valid lease on seq 1 that has not expired: seq 1 stays leased
        ledger.acked = {n: v for n, v in ledger.acked.items() if v[1] != 1}
    lost, problems = check_invariants(items, ledger)
    assert lost == 0 and not problems, "\n".join(problems)
