"""Items read back exactly as saved while the store holds their repeated parts once (issue 21).

The store keeps each distinct user and event label once, recomputes generated ids from their seq
and drops a `time` equal to the saved time (`StoredBody`). This drives the real binary with seeded
random saves over a small pool of users and names (so entries are shared, released and reused),
partial drains, a restart (the loaded rows are split again by a process with another id key) and
more of the same, and compares every drained and dumped item, members and their order, with a
plain model: the params each acknowledged save sent.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import find_binary, strict_equal

T = "2026-01-01T00:00:00.000Z"
USERS: list[dict[str, Any]] = [
    {"externalId": "user-000001"},
    {"externalId": "q\"uo\\te é 𐐷"},
    {"brazeId": "0000000000000000000004d2"},
    {"alias": {"name": "device-000007", "label": "device_id"}},
    {"externalId": "x" * 300},  # longer than an entry may be: held in the row
]
NAMES = ["purchase", "level_up", "push_opened", "a\"b"]


def save(rng: random.Random, n: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A request and the item members (after `deliveryCount`) the store must give back for it."""
    user = rng.choice(USERS + [None])
    if rng.random() < 0.25:
        params: dict[str, Any] = {"field": "email", "value": f"p{n}@example.com"}
        want: dict[str, Any] = {"kind": "userAttribute", "user": user or USERS[0], "field": "email", "value": params["value"]}
        params["user"] = want["user"]
        method = "saveUserAttribute"
    else:
        name = rng.choice(NAMES) if rng.random() < 0.9 else f"unique-{n}"
        props = {"step": rng.randint(1, 9), "tags": ["a", "b"]} if rng.random() < 0.8 else {}
        params = {"name": name, "properties": props}
        time = T if rng.random() < 0.8 else "2025-06-01T12:00:00.000Z"
        if time != T:
            params["time"] = time
        if user:
            params["user"] = user
        want = {"kind": "customEvent", **({"user": user} if user else {}), "name": name, "properties": props, "time": time}
        method = "saveCustomEvent"
    if rng.random() < 0.2:
        params["id"] = f"client-{n}"
    return {"jsonrpc": "2.0", "id": n, "method": method, "params": params}, want


def members(item: dict[str, Any]) -> dict[str, Any]:
    """What the save sent, as the store gives it back (`superseded` is the flush's note, not the item's)."""
    return {k: v for k, v in item.items() if k not in ("id", "seq", "savedAt", "deliveryCount", "superseded")}


def session(binary: Path, store: Path, rng: random.Random, first: int, model: dict[str, dict[str, Any]]) -> int:
    """Saves and partial drains in one process; checks every drained item against `model`."""
    lines, kinds = [], []
    for n in range(first, first + 400):
        if rng.random() < 0.1:
            lines.append({"jsonrpc": "2.0", "id": n, "method": "flushPending", "params": {"max": rng.randint(1, 8)}})
            kinds.append(None)
        else:
            request, want = save(rng, n)
            lines.append(request)
            kinds.append(want)
    text = "".join(json.dumps(x, ensure_ascii=rng.random() < 0.5) + "\n" for x in lines)
    out = subprocess.run(
        [str(binary), "--store", str(store), "--fixed-clock", T], input=text.encode(), capture_output=True, timeout=60
    )
    assert out.returncode == 0, out.stderr.decode()
    replies = [json.loads(x) for x in out.stdout.decode().splitlines()]
    assert len(replies) == len(lines)
    drained = 0
    for reply, want in zip(replies, kinds):
        result = reply["result"]
        if want is not None:
            model.setdefault(result["id"], want)  # a repeated client id answers with the first item
            continue
        for item in result["items"]:
            expected = model.pop(item["id"])
            assert strict_equal(members(item), expected), (item, expected)
            assert list(members(item)) == list(expected), item  # the members in the order they were saved
            drained += 1
    return drained


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_items_read_back_as_saved_across_drains_and_a_restart(tmp_path: Path, seed: int) -> None:
    binary = find_binary()
    if binary is None:
        pytest.skip("no push-outbox binary")
    rng = random.Random(seed)
    store = tmp_path / "store"
    model: dict[str, dict[str, Any]] = {}
    drained = session(binary, store, rng, 1, model)
    drained += session(binary, store, rng, 1000, model)  # the rows loaded from disk, split again
    dumped = subprocess.run([str(binary), "dump", "--store", str(store)], capture_output=True, timeout=60)
    assert dumped.returncode == 0, dumped.stderr.decode()
    items = [json.loads(x) for x in dumped.stdout.decode().splitlines()]
    assert sorted(i["id"] for i in items) == sorted(model), "dump lists exactly the undrained items"
    for item in items:
        assert strict_equal(members(item), model[item["id"]]) and list(members(item)) == list(model[item["id"]])
    assert drained > 100 and len(items) > 200, (drained, len(items))
