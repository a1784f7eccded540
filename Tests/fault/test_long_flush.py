"""A flushPending of a large set is a long call (Protocol/README.md, "Long calls"): its items are
taken (drained or leased, and journaled) when the request is read, and its reply is written across
loop turns, so a save and a status sent right behind it are answered before it. The flushed set,
plus what a later flush finds, is exactly what a plain model says was saved, in order: the save sent
behind it is never in it, and with a store on disk what the reply named stays taken after kill -9.
Seeded: the formats, drain or lease, `max`, `--memory` or a store, and the mix of saves."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

LONG = 20_000  # FlushPending.longCallItems: a flush of more items is a long call


def line(id_: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


class Box:
    def __init__(self, binary: Path, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [str(binary), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        text = self.proc.stdout.readline()
        assert text, "stdout closed: " + self.proc.stderr.read().decode()[-2000:]
        message: dict[str, Any] = json.loads(text)
        return message

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=120) == 0
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def save(rng: random.Random, n: int) -> tuple[str, dict[str, Any], tuple[str, Any]]:
    """One save: its method, params, and what the model expects to see of it (kind, name or key)."""
    user = {"externalId": f"u{rng.randint(0, 50)}"}
    if rng.random() < 0.8:
        props = {"n": n, "s": rng.choice(["a", "é", 'q"t', "line\nx"])}
        return (
            "saveCustomEvent",
            {"name": f"e{n}", "user": user, "properties": props},
            ("e", f"e{n}"),
        )
    return (
        "saveCustomAttribute",
        {"key": f"k{n}", "op": "inc", "value": 1, "user": user},
        ("a", f"k{n}"),
    )


def load(box: Box, rng: random.Random, count: int) -> list[tuple[str, Any]]:
    """Saves `count` items in bursts (each burst's replies read before the next is written)."""
    model = []
    for start in range(0, count, 500):
        burst = []
        for n in range(start, min(count, start + 500)):
            method, params, seen = save(rng, n)
            burst.append(line(n, method, params))
            model.append(seen)
        box.write(b"".join(burst))
        for _ in burst:
            assert "result" in box.read()
    return model


def flushed(result: dict[str, Any], usersTrack: bool) -> list[tuple[str, Any]]:
    """What a flush reply handed out, as the model names it (per body: attributes, then events)."""
    if not usersTrack:
        return [
            ("e", i["name"]) if i["kind"] == "customEvent" else ("a", i["key"])
            for i in result["items"]
        ]
    out: list[tuple[str, Any]] = []
    for body in result["requests"]:
        out += [("a", next(k for k in a if k != "external_id")) for a in body["attributes"]]
        out += [("e", e["name"]) for e in body["events"]]
    return out


def per_body_order(model: list[tuple[str, Any]], limit: int = 75) -> list[tuple[str, Any]]:
    """The model in the order /users/track bodies list it: each body of `limit` objects (combined),
    attributes first."""
    out: list[tuple[str, Any]] = []
    for start in range(0, len(model), limit):
        body = model[start : start + limit]
        out += [m for m in body if m[0] == "a"] + [m for m in body if m[0] == "e"]
    return out


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_large_flush_answers_requests_behind_it_first_and_hands_out_what_was_saved(
    outbox_bin: Path, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    count = LONG + rng.randint(1, 6000)
    usersTrack = rng.random() < 0.5
    lease = rng.random() < 0.5
    cap = rng.choice([None, LONG + 1 + rng.randint(0, count - LONG - 1)])
    store = ["--store", str(tmp_path / "store")] if rng.random() < 0.5 else ["--memory"]
    box = Box(outbox_bin, store)
    model = load(box, rng, count)
    params: dict[str, Any] = {"format": "usersTrack" if usersTrack else "items"}
    if lease:
        params["leaseMs"] = 600_000
    if cap is not None:
        params["max"] = cap
    late = {"name": "late", "user": {"externalId": "u1"}}
    box.write(
        line("flush", "flushPending", params)
        + line("late", "saveCustomEvent", late)
        + line("status", "status")
    )
    order = [box.read() for _ in range(3)]
    ids = [m["id"] for m in order]
    assert ids == ["late", "status", "flush"], f"seed {seed}: replies in the order {ids}"
    result = order[2]["result"]
    taken = model[: cap or count]
    expected = per_body_order(taken) if usersTrack else taken
    assert flushed(result, usersTrack) == expected, f"seed {seed}: the flush handed out another set"
    if store[0] == "--store":
        # What its reply named is durable: after kill -9 and a restart, it does not come back.
        box.proc.kill()
        box.proc.wait(timeout=60)
        for stream in (box.proc.stdin, box.proc.stdout, box.proc.stderr):
            assert stream is not None
            stream.close()
        box = Box(outbox_bin, store)
    # What stays: the rest of the model and the late save (a lease hides what it took).
    box.write(line("rest", "flushPending", {"max": 10**6}))
    rest = box.read()["result"]
    assert flushed(rest, False) == model[len(taken) :] + [("e", "late")], f"seed {seed}"
    box.close()
