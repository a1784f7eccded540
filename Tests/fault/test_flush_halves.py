"""`push-outbox flush --format usersTrack` of a round large enough to be written on two threads.

A round of at least 2,048 rows has its custom events' objects written by two threads, half the rows
each, then placed in bodies in row order (`WrittenEvents`). These drive the real binary with seeded
random saves (events with and without a user, user and custom attributes, unusual users and names,
explicit times, bodies the store holds whole), then flush the loaded store in one round, and compare
what was written with a plain model of Braze's `/users/track` built from what each acknowledged save
sent: every object, in save order within its array, exactly once; the items without a user are
reported and left as dead letters; nothing is left pending. A crafted record (a valid checksum, a
body no save writes) placed in the second half is never written.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import ITEM, crc32c, item_payload, read_segment, segments
from outbox import strict_equal
from test_crafted_flush import record

SAVES = 5_000  # one round (10,000 at most), split in two halves of 2,500
USERS: list[dict[str, Any]] = [
    *({"externalId": f"user-{n:05d}"} for n in range(300)),
    {"externalId": "q\"uo\\te é 𐐷"},
    {"brazeId": "0000000000000000000004d2"},
    {"alias": {"name": "device-000007", "label": "device_id"}},
    {"externalId": "x" * 300},  # longer than an intern entry may be: held in the row
]
NAMES = ["purchase", "level_up", "push_opened", "a\"b", "ü" * 40]


def braze_user(user: dict[str, Any]) -> dict[str, Any]:
    if "externalId" in user:
        return {"external_id": user["externalId"]}
    if "brazeId" in user:
        return {"braze_id": user["brazeId"]}
    return {"user_alias": {"alias_name": user["alias"]["name"], "alias_label": user["alias"]["label"]}}


def save(rng: random.Random, n: int) -> tuple[dict[str, Any], tuple[str, dict[str, Any]] | None]:
    """A request and the (array, object) the model expects for it; None when it names no user."""
    user = rng.choice(USERS) if rng.random() < 0.93 else None
    roll = rng.random()
    if roll < 0.08:  # every key is new, so no attribute supersedes another
        params: dict[str, Any] = {"key": f"attr_{n}", "value": rng.choice([1, "v", True, 2.5])}
        method, array, fields = "saveCustomAttribute", "attributes", {f"attr_{n}": params["value"]}
    elif roll < 0.12:
        params = {"field": "email", "value": f"p{n}@example.com"}
        method, array, fields = "saveUserAttribute", "attributes", {"email": params["value"]}
        user = user or USERS[0]  # a user attribute always names one
    else:
        name = rng.choice(NAMES) if rng.random() < 0.95 else f"unique-{n}"
        props = {"step": rng.randint(1, 9), "tags": ["a", "é"], "n": n} if rng.random() < 0.85 else {}
        params = {"name": name, "properties": props}
        if rng.random() < 0.1:
            params["time"] = "2025-06-01T12:00:00.000Z"
        # An event without properties is sent without the key.
        method, array, fields = "saveCustomEvent", "events", {"name": name, **({"properties": props} if props else {})}
        if "time" in params:
            fields["time"] = params["time"]
    if user:
        params["user"] = user
    request = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
    return request, ((array, {**braze_user(user), **fields}) if user else None)


@pytest.fixture(scope="module")
def saved(outbox_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list, int]:
    """A store of SAVES seeded saves: its path, the model's objects in save order, and the count
    of acknowledged saves that name no user."""
    store = tmp_path_factory.mktemp("flush-halves") / "store"
    rng = random.Random(2111)
    requests, wants = zip(*(save(rng, n) for n in range(SAVES)))
    lines = "".join(json.dumps(r) + "\n" for r in requests).encode()
    run = subprocess.run([str(outbox_bin), "--store", str(store)], input=lines, capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr[-1500:]
    replies = [json.loads(line) for line in run.stdout.splitlines()]
    ok = {r["id"] for r in replies if "result" in r}
    assert len(replies) == SAVES and len(ok) > SAVES * 0.95, [r for r in replies if "error" in r][:3]
    model = [wants[n] for n in range(SAVES) if n in ok and wants[n]]
    # Within a flush a user attribute is sent once per user and field: the last one saved.
    last = {(json.dumps(requests[n]["params"]["user"]), requests[n]["params"]["field"]): n
            for n in range(SAVES) if n in ok and requests[n]["method"] == "saveUserAttribute"}
    model = [wants[n] for n in range(SAVES) if n in ok and wants[n] and (
        requests[n]["method"] != "saveUserAttribute"
        or last[(json.dumps(requests[n]["params"]["user"]), requests[n]["params"]["field"])] == n)]
    return store, model, sum(1 for n in range(SAVES) if n in ok and not wants[n])


def flush(outbox_bin: Path, store: Path, *args: str) -> subprocess.CompletedProcess:
    run = subprocess.run(
        [str(outbox_bin), "flush", "--store", str(store), "--format", "usersTrack", *args],
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr[-1500:]
    return run


def written(run: subprocess.CompletedProcess) -> dict[str, list[dict[str, Any]]]:
    got: dict[str, list[dict[str, Any]]] = {"events": [], "attributes": []}
    for line in run.stdout.split(b"\n")[:-1]:
        body = json.loads(line)  # strict: a raw control byte fails here
        for array in got:
            got[array].extend(body[array])
    return got


def check(got: dict[str, list[dict[str, Any]]], model: list) -> None:
    for array in ("events", "attributes"):
        want = [obj for a, obj in model if a == array]
        assert len(got[array]) == len(want), (array, len(got[array]), len(want))
        for index, (obj, expected) in enumerate(zip(got[array], want)):
            obj = dict(obj)
            if array == "events" and "time" not in expected:
                assert isinstance(obj.pop("time", None), str), (index, obj)
            assert strict_equal(obj, expected), (array, index, obj, expected)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_large_round_writes_every_object_as_the_model_in_save_order(
    outbox_bin: Path, tmp_path: Path, saved: tuple[Path, list, int], threads: str
) -> None:
    src, model, without_user = saved
    store = tmp_path / "store"
    shutil.copytree(src, store)
    run = flush(outbox_bin, store, "--threads", threads)
    check(written(run), model)
    assert f"{without_user} without an identifier moved to the dead letters".encode() in run.stderr, run.stderr[-800:]
    assert b"0 still pending, 0 leased" in run.stderr, run.stderr[-800:]
    assert b"not well-formed" not in run.stderr, run.stderr[-800:]
    assert written(flush(outbox_bin, store)) == {"events": [], "attributes": []}  # drained, durably


@pytest.mark.timeout(120)
def test_a_crafted_record_in_the_second_half_is_never_written(
    outbox_bin: Path, tmp_path: Path, saved: tuple[Path, list, int]
) -> None:
    src, model, _ = saved
    store = tmp_path / "store"
    shutil.copytree(src, store)
    seg = segments(store)[-1]
    template = item_payload(next(r for r in read_segment(seg) if r.type == ITEM))
    next_seq = max(r.seq for s in segments(store) for r in read_segment(s)) + 1
    body = b',"user":{"externalId":"crafted"},"name":"a","properties":{"k":"\x1f"}<time>'
    with open(seg, "ab") as f:
        f.write(record(next_seq, template, body))
    run = flush(outbox_bin, store)
    check(written(run), model)
    assert b"were not well-formed JSON and were dropped" in run.stderr, run.stderr[-800:]
