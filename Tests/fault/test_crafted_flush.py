"""`push-outbox flush --format usersTrack` of a loaded store with a crafted record (a valid CRC-32C,
a body the store must never write): the one-shot checks each loaded body as it renders it (each
body is read once), so these prove that check is made. Every line written is JSON; every
acknowledged save comes out exactly once as the object a plain model of Braze's `/users/track`
builds from what was sent; the crafted item is never written and is reported dropped."""

from __future__ import annotations

import datetime
import json
import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import ITEM, Ledger, crc32c, item_payload, read_segment, save_run, segments
from outbox import strict_equal

SEED = 7321
SAVES = 150
CRAFTED_ID = bytes(range(0xC0, 0xD0))

# Bodies a save never writes. Each names a user, so the flush takes the item and renders it. Those
# ending in `TIME` end with the item's own saved time, as a save's do: the store holds them in parts
# (user, label, rest), and the flush writes events from those parts, checking each as it copies it.
TIME = b"<time>"
BODIES = {
    "not-members": b'{"name":\n"x',
    # A raw control byte in a string: a walk that only follows the structure would copy it out.
    "raw-control-byte": b',"user":{"externalId":"crafted"},"name":"a\x01b","properties":{}',
    "unclosed-properties": b',"user":{"externalId":"crafted"},"name":"a","properties":{"k":[1,2}',
    "parts:control-byte-in-name": b',"user":{"externalId":"crafted"},"name":"a\x01b","properties":{}' + TIME,
    "parts:control-byte-in-properties": b',"user":{"externalId":"crafted"},"name":"a","properties":{"k":"\x1f"}'
    + TIME,
    "parts:bad-escape-in-user": b',"user":{"externalId":"cr\\qafted"},"name":"a","properties":{}' + TIME,
    "parts:cut-properties": b',"user":{"externalId":"crafted"},"name":"a","properties":{"k":[1,' + TIME,
    "parts:lone-surrogate-in-name": b',"user":{"externalId":"crafted"},"name":"\xed\xa0\x80","properties":{}' + TIME,
}


# Well formed but not as a save writes it: written, as the object the parsed body gives.
WELL_FORMED = {
    "parts:spaced-properties": (
        b',"user":{"externalId":"crafted"},"name":"a","properties":{"k": 1.50}' + TIME,
        {"external_id": "crafted", "name": "a", "properties": {"k": 1.5}},
    ),
    # A member no save writes, after the properties: not part of the event's object.
    "parts:extra-member": (
        b',"user":{"externalId":"crafted"},"name":"a","properties":{"k":2},"extra":[3]' + TIME,
        {"external_id": "crafted", "name": "a", "properties": {"k": 2}},
    ),
}


def time_member(saved_at: int) -> bytes:
    """`,"time":"…"` as the server writes an item's saved time (UTC, milliseconds)."""
    moment = datetime.datetime.fromtimestamp(saved_at / 1000, datetime.timezone.utc)
    return b',"time":"' + moment.strftime("%Y-%m-%dT%H:%M:%S.").encode() + b"%03dZ\"" % (saved_at % 1000)


def record(seq: int, template: dict, body: bytes) -> bytes:
    body = body.replace(TIME, time_member(template["savedAt"]))
    payload = struct.pack("<qIBBB", template["savedAt"], 0, 0, template["flags"], 0) + CRAFTED_ID + body
    content = bytes([ITEM]) + struct.pack("<Q", seq) + payload
    return struct.pack("<II", len(payload), crc32c(content)) + content


@pytest.fixture(scope="module")
def base(outbox_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ledger]:
    store = tmp_path_factory.mktemp("crafted-flush") / "store"
    ledger = Ledger()
    save_run(outbox_bin, store, ledger, random.Random(SEED), range(SAVES), "kill")
    return store, ledger


def expected_object(method: str, params: dict) -> tuple[str, dict]:
    """The model: the array and the object Braze's /users/track takes for one save (no `time`:
    the model does not know when the server saved it)."""
    ident = {"external_id": params["user"]["externalId"]}
    if method == "saveCustomEvent":
        return "events", {**ident, "name": params["name"], "properties": params.get("properties", {})}
    if method == "saveCustomAttribute":  # make_save uses the default op, set
        return "attributes", {**ident, params["key"]: params["value"]}
    return "attributes", {**ident, params["field"]: params["value"]}


def flush_with(outbox_bin: Path, src: Path, tmp_path: Path, body: bytes) -> tuple[subprocess.CompletedProcess, dict]:
    """A copy of the store `src` with one crafted item record of `body` appended to its newest
    segment, flushed by `push-outbox flush --format usersTrack`: the run, and the template item."""
    store = tmp_path / "store"
    shutil.copytree(src, store)
    seg = segments(store)[-1]
    template = item_payload(next(r for r in read_segment(seg) if r.type == ITEM))
    next_seq = max(r.seq for s in segments(store) for r in read_segment(s)) + 1
    with open(seg, "ab") as f:
        f.write(record(next_seq, template, body))
    run = subprocess.run(
        [str(outbox_bin), "flush", "--store", str(store), "--format", "usersTrack"],
        capture_output=True, timeout=50, stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr[-1500:]
    return run, template


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(BODIES))
def test_a_crafted_body_is_never_written_by_a_users_track_flush(
    outbox_bin: Path, tmp_path: Path, base: tuple[Path, Ledger], name: str
) -> None:
    src, ledger = base
    run, _ = flush_with(outbox_bin, src, tmp_path, BODIES[name])
    got: dict[str, tuple[str, dict]] = {}
    for line in run.stdout.split(b"\n")[:-1]:
        body = json.loads(line)  # strict: a raw control byte fails here
        for array in ("events", "attributes"):
            for obj in body[array]:
                user = obj.get("external_id")
                assert user not in got, f"{user} written twice"
                assert user != "crafted", f"the crafted item was written: {obj}"
                got[user] = (array, obj)
    want = {f"n{n}": expected_object(*ledger.sent[n]) for n in ledger.acked}
    assert set(got) == set(want), (sorted(set(want) - set(got))[:5], sorted(set(got) - set(want))[:5])
    for user, (array, obj) in want.items():
        got_array, got_obj = got[user]
        assert got_array == array, (user, got_array, array)
        time = got_obj.pop("time", None)
        assert array == "attributes" or isinstance(time, str), (user, time)
        assert strict_equal(got_obj, obj), (user, got_obj, obj)
    assert b"were not well-formed JSON and were dropped" in run.stderr, run.stderr[-800:]
    assert b"0 still pending, 0 leased, 0 dead letters" in run.stderr, run.stderr[-800:]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(WELL_FORMED))
def test_a_well_formed_body_in_another_spelling_is_written_as_parsed(
    outbox_bin: Path, tmp_path: Path, base: tuple[Path, Ledger], name: str
) -> None:
    src, ledger = base
    body, want = WELL_FORMED[name]
    run, template = flush_with(outbox_bin, src, tmp_path, body)
    objects = [o for line in run.stdout.split(b"\n")[:-1] for o in json.loads(line)["events"]]
    crafted = [o for o in objects if o["external_id"] == "crafted"]
    assert len(crafted) == 1, crafted
    assert crafted[0].pop("time") == time_member(template["savedAt"])[9:-1].decode()
    assert strict_equal(crafted[0], want), crafted[0]
    assert len(objects) == 1 + sum(1 for n in ledger.acked if ledger.sent[n][0] == "saveCustomEvent")
    assert b"not well-formed" not in run.stderr, run.stderr[-800:]
