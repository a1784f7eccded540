"""`load.image` over the real binary: a clean exit (EOF or SIGTERM) writes it, the next start loads the
rows from it and deletes it, a kill -9 leaves none, and a damaged one is not used. Seeded random
sessions of saves, drains, leases, acks and releases, each process started with
`--load-image-min-bytes 0`, are compared after every restart and at the end with a plain model of
what was acknowledged: nothing acknowledged is lost and nothing removed comes back, whichever way
the rows were loaded.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
from pathlib import Path

import pytest
from conftest import Outbox, file_size_limit, flush_all, rpc

IMAGE = "load.image"
LOADED = "from load.image"


def start(binary: Path, store: Path, *args: str) -> Outbox:
    return Outbox(binary, store, "--load-image-min-bytes", "0", "--log-level", "info", *args, snapshot_interval=0.05)


def save_many(ob: Outbox, rng: random.Random, model: dict, count: int) -> None:
    sent = {}
    for _ in range(count):
        rid = ob.new_id()
        user = rng.choice([{"externalId": f"u{rng.randrange(30)}"}, {"brazeId": f"{rng.getrandbits(64):016x}"}, None])
        params = {"name": f"e{rng.randrange(6)}", "properties": {"n": rid, "s": "x" * rng.randrange(0, 200)}}
        if user:
            params["user"] = user
        sent[rid] = params
        ob.send(rpc("saveCustomEvent", params, id=rid))
    for reply in ob.wait_ids(sent):
        assert "result" in reply, reply
        model[reply["result"]["id"]] = dict(sent[reply["id"]], deliveries=0)


def check_held(ob: Outbox, model: dict) -> None:
    status = ob.result("status")
    assert status["pending"]["total"] == len(model), (status["pending"], len(model))


def release(ob: Outbox, flush_id: str, ids: list[str], model: dict) -> None:
    assert ob.result("releaseFlush", {"flushId": flush_id})["released"] == len(ids)
    for item_id in ids:
        model[item_id]["deliveries"] += 1


def one_session(binary: Path, store: Path, rng: random.Random, model: dict, expect_image: bool) -> bool:
    """One process: returns True when it ended cleanly (an image is then expected)."""
    ob = start(binary, store)
    leased: dict[str, list[str]] = {}
    try:
        check_held(ob, model)
        assert not (store / IMAGE).exists(), "the image is deleted at start"
        for _ in range(rng.randrange(3, 12)):
            roll = rng.random()
            if roll < 0.5:
                save_many(ob, rng, model, rng.randrange(1, 60))
            elif roll < 0.7 and not leased:
                for item in ob.result("flushPending", {"max": rng.randrange(1, 20)})["items"]:
                    del model[item["id"]]
            elif roll < 0.85 and not leased:
                lease = ob.result("flushPending", {"max": rng.randrange(1, 20), "leaseMs": 600_000})
                if lease["items"]:
                    leased[lease["flushId"]] = [item["id"] for item in lease["items"]]
            elif leased:
                flush_id, ids = leased.popitem()
                if rng.random() < 0.5:
                    assert ob.result("ackFlush", {"flushId": flush_id})["acked"] == len(ids)
                    for item_id in ids:
                        del model[item_id]
                else:
                    release(ob, flush_id, ids, model)
        for flush_id, ids in leased.items():  # settled before the end, so the model knows what is held
            release(ob, flush_id, ids, model)
        how = rng.choice(["eof", "eof", "term", "kill"])
        if how == "kill":
            ob.kill9()
        elif how == "term":
            ob.proc.send_signal(signal.SIGTERM)
            assert ob.proc.wait(30) == 0
            ob.join()
        else:
            ob.close(expect=0)
        assert (LOADED in ob.stderr) == expect_image, f"expected the rows from the image: {expect_image}\n{ob.stderr}"
        assert (store / IMAGE).exists() == (how != "kill"), f"ended by {how}"
        return how != "kill"
    finally:
        ob.ensure_dead()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sessions_through_load_images_keep_exactly_what_was_acknowledged(
    outbox_bin: Path, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    store = tmp_path / "store"
    model: dict[str, dict] = {}
    clean = False
    images = 0
    for _ in range(10):
        clean = one_session(outbox_bin, store, rng, model, expect_image=clean)
        images += clean
    assert images >= 3, f"seed {seed}: only {images} clean exits"
    flushed = flush_all(outbox_bin, store, "--log-level", "info")
    assert (LOADED in flushed.stderr) == clean
    got = {item["id"]: item for item in flushed.items}
    assert set(got) == set(model), (
        f"seed {seed}: lost {sorted(set(model) - set(got))[:5]}, invented {sorted(set(got) - set(model))[:5]}"
    )
    for item_id, params in model.items():
        body = got[item_id]
        assert body["name"] == params["name"] and body["properties"] == params["properties"], item_id
        assert body.get("user") == params.get("user"), item_id
        assert body["deliveryCount"] == params["deliveries"], item_id


def test_a_damaged_image_is_not_used_and_nothing_is_lost(outbox_bin: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    model: dict[str, dict] = {}
    ob = start(outbox_bin, store)
    try:
        save_many(ob, random.Random(9), model, 400)
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    image = store / IMAGE
    data = bytearray(image.read_bytes())
    data[len(data) // 2] ^= 0x40
    image.write_bytes(bytes(data))
    flushed = flush_all(outbox_bin, store, "--log-level", "info")
    assert LOADED not in flushed.stderr and "load.image not used" in flushed.stderr, flushed.stderr
    assert not image.exists()
    assert {item["id"] for item in flushed.items} == set(model)


@pytest.mark.parametrize("flag", [[], ["--load-image-min-bytes", "off"]])
def test_a_small_store_or_off_writes_no_image(outbox_bin: Path, tmp_path: Path, flag: list[str]) -> None:
    """The default writes one only for 256 MiB of items or more; `off` never."""
    store = tmp_path / "store"
    ob = Outbox(outbox_bin, store, *flag)
    try:
        save_many(ob, random.Random(3), {}, 50)
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    assert not (store / IMAGE).exists(), os.listdir(store)


def test_an_image_the_disk_refuses_is_skipped_and_nothing_is_lost(outbox_bin: Path, tmp_path: Path) -> None:
    """A file-size limit above every segment (4 MiB at most) and below the image: the exit still
    succeeds, says why there is no image, leaves no temporary file, and the next start replays."""
    store = tmp_path / "store"
    model: dict[str, dict] = {}
    limit = 4_500_000
    ob = Outbox(
        outbox_bin, store, "--load-image-min-bytes", "0", "--log-level", "info", preexec_fn=file_size_limit(limit)
    )
    try:
        save_many(ob, random.Random(11), model, 30_000)
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    assert "no load.image" in ob.stderr, ob.stderr[-2000:]
    assert sorted(p.name for p in store.iterdir() if "image" in p.name) == []
    assert max(p.stat().st_size for p in store.iterdir() if p.is_file()) <= limit
    flushed = flush_all(outbox_bin, store, "--log-level", "info")
    assert LOADED not in flushed.stderr
    assert {item["id"] for item in flushed.items} == set(model)


TWIN = ["--fixed-clock", "2026-01-01T00:00:00Z", "--id-seed", "7"]


def make_twin(binary: Path, store: Path, letter: str) -> set[str]:
    """A store of 300 saves whose checkpoint and segment sizes are those of every other twin (the
    clock and the ids fixed, the bodies of one length), only the letters differ. Returns the names."""
    ob = start(binary, store, *TWIN)
    try:
        for n in range(300):
            user = {"externalId": f"{letter}-u{n % 7}"}
            ob.result("saveCustomEvent", {"name": f"{letter}{n:04d}", "user": user})
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    return {f"{letter}{n:04d}" for n in range(300)}


@pytest.mark.parametrize("identity", ["own", "copied"])
def test_an_image_from_a_twin_store_is_not_used(outbox_bin: Path, tmp_path: Path, identity: str) -> None:
    """Issue 40 item 12: an image was matched to the files only by the checkpoint and the segment
    sizes, so one copied from a twin store was used and the store served the twin's items. It is
    bound to the store (`store.id`) and to the segments' contents (their tails' checksums): copied
    alone, or with the twin's `store.id` too, it is not used, and the store serves its own items."""
    a, b = tmp_path / "a", tmp_path / "b"
    make_twin(outbox_bin, a, "a")
    own = make_twin(outbox_bin, b, "b")
    assert (a / "checkpoint.json").read_bytes() == (b / "checkpoint.json").read_bytes()
    for segment in sorted(a.glob("segment.*")):
        assert segment.stat().st_size == (b / segment.name).stat().st_size
    assert (a / IMAGE).exists() and (b / IMAGE).exists()
    shutil.copyfile(a / IMAGE, b / IMAGE)
    if identity == "copied" and (a / "store.id").exists():
        shutil.copyfile(a / "store.id", b / "store.id")
    flushed = flush_all(outbox_bin, b, "--log-level", "info")
    served = {item["name"] for item in flushed.items}
    assert served == own, f"served {len(served - own)} items of the twin, e.g. {sorted(served - own)[:3]}"
    assert LOADED not in flushed.stderr and "load.image not used" in flushed.stderr, flushed.stderr


def test_an_image_without_the_binding_is_rebuilt(outbox_bin: Path, tmp_path: Path) -> None:
    """A store from before `store.id` gets one at its next open; an image written before the binding
    (another version) is not used, and the next clean exit writes one that is."""
    store = tmp_path / "store"
    own = make_twin(outbox_bin, store, "c")
    (store / "store.id").unlink(missing_ok=True)
    image = bytearray((store / IMAGE).read_bytes())
    image[8:12] = (1).to_bytes(4, "little")  # the version before the binding
    (store / IMAGE).write_bytes(bytes(image))
    ob = start(outbox_bin, store)
    try:
        assert ob.result("status")["pending"]["total"] == 300
        assert (store / "store.id").exists()
        ob.close(expect=0)
    finally:
        ob.ensure_dead()
    assert LOADED not in ob.stderr, ob.stderr
    flushed = flush_all(outbox_bin, store, "--log-level", "info")
    assert LOADED in flushed.stderr, flushed.stderr
    assert {item["name"] for item in flushed.items} == own
