"""Building saves with typed values, a ledger of what was sent and acknowledged, and the invariants
checked after every fault: acknowledged ⊆ recovered, nothing duplicated, nothing invented.
Re-exported by conftest.py."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Iterable

from outbox import Outbox, rpc, strict_equal

# ---------------------------------------------------------------------------------------------
# Building saves and checking items against them
# ---------------------------------------------------------------------------------------------


class Ledger:
    """What was sent and what was acknowledged, keyed by a unique number n carried in the user id
    (`user.externalId == "n<n>"`), so every recovered item can be traced to its request."""

    def __init__(self) -> None:
        self.sent: dict[int, tuple[str, dict]] = {}  # n -> (method, params)
        self.acked: dict[int, tuple[str, int]] = {}  # n -> (item id, seq) from an ok answer
        self.request_n: dict[Any, int] = {}  # request id -> n
        self.errors: list[dict] = []

    def record(self, request_id: Any, n: int, method: str, params: dict) -> dict:
        self.sent[n] = (method, params)
        self.request_n[request_id] = n
        return rpc(method, params, request_id)

    def absorb(self, responses: Iterable[dict]) -> None:
        for response in responses:
            n = self.request_n.get(response.get("id"))
            if n is None:
                continue
            if "result" in response:
                res = response["result"]
                previous = self.acked.get(n)
                assert previous is None or previous == (res["id"], res["seq"]), (
                    f"two answers for n={n} disagree: {previous} vs {res}"
                )
                self.acked[n] = (res["id"], res["seq"])
            else:
                self.errors.append(response)

    def absorb_outbox(self, ob: Outbox) -> None:
        with ob.cond:
            responses = list(ob.by_id.values())
        self.absorb(responses)


ATTRIBUTE_FIELDS = ["first_name", "last_name", "home_city"]


def padded_save_lines(first: int, count: int) -> bytes:
    """Saves `first` .. `first + count - 1` (their ids), about 200 bytes each: 20,000 of them fill
    about one 4 MiB journal segment."""
    lines = []
    for n in range(first, first + count):
        params = {
            "name": "purchase",
            "properties": {"campaign": "black_friday", "step": n % 9, "ok": True, "tags": ["a", "b"], "pad": "x" * 60},
            "user": {"externalId": f"user-{n % 1000}"},
        }
        lines.append(json.dumps({"jsonrpc": "2.0", "id": n, "method": "saveCustomEvent", "params": params}))
    return ("\n".join(lines) + "\n").encode()


def fill_with_saves(outbox: Outbox, count: int, first: int = 1) -> None:
    """Sends `padded_save_lines(first, count)` and waits until every one is acknowledged."""
    assert outbox.write_raw(padded_save_lines(first, count))
    replies = outbox.wait_ids(range(first, first + count), timeout=120)
    assert all("result" in reply for reply in replies)


def make_save(rng, n: int, client_id: str | None = None) -> tuple[str, dict]:
    """A save with typed values that must survive exactly: ints (some beyond 2^53), bools,
    floats, strings (non-ASCII), arrays and nested objects."""
    user = {"externalId": f"n{n}"}
    roll = rng.random()
    if roll < 0.6:
        props: dict[str, Any] = {
            "n": n,
            "big": 2**53 + n,
            "neg": -n,
            "b": n % 2 == 0,
            "f": n + 0.25,
            "s": f"é{n}😀",
            "o": {"a": [1, True, "z", 2.5], "k": n % 3 == 0},
        }
        if rng.random() < 0.3:
            props["pad"] = "x" * rng.randrange(0, 250)
        params = {"name": f"evt_{n % 5}", "properties": props, "user": user}
        method = "saveCustomEvent"
    elif roll < 0.85:
        value = rng.choice(
            [n, 2**60 + n, n % 2 == 1, n + 0.5, f"v{n}", [f"a{n}", "b"], {"x": n, "y": True, "z": [1.5, False]}]
        )
        params = {"key": f"attr_{n % 7}", "value": value, "user": user}
        method = "saveCustomAttribute"
    else:
        params = {"field": ATTRIBUTE_FIELDS[n % 3], "value": f"val{n}", "user": user}
        method = "saveUserAttribute"
    if client_id is not None:
        params["id"] = client_id
    return method, params


def save_run(binary: Path, store: Path, ledger: Ledger, rng: random.Random, ns: range, end: str) -> None:
    """One process: saves `ns` one burst at a time (fsync always, no timed snapshot), then ends
    with kill -9 (`end="kill"`) or EOF (`end="eof"`: clean exit, final snapshot)."""
    ob = Outbox(binary, store, fsync="always", snapshot_interval=3600)
    try:
        for n in ns:
            ob.send(ledger.record(n, n, *make_save(rng, n)))
            ledger.absorb(ob.wait_ids([n]))
        if end == "kill":
            ob.kill9()
        else:
            ob.close(expect=0)
    finally:
        ob.ensure_dead()
    assert not ledger.errors, ledger.errors


def build_segmented_store(binary: Path, store: Path, rng: random.Random, runs: int = 6, per_run: int = 400) -> Ledger:
    """A store of `runs` x `per_run` items in `runs` segments (one process run each, fsync never, no
    timed snapshot, clean exit), nothing snapshotted away; the ledger of what was acknowledged."""
    ledger = Ledger()
    n = 0
    for _ in range(runs):
        ob = Outbox(binary, store, fsync="never", snapshot_interval=3600)
        try:
            batch = [ledger.record(n + k, n + k, *make_save(rng, n + k)) for k in range(per_run)]
            n += per_run
            ob.send(batch)
            ledger.absorb(ob.wait_ids(range(n - per_run, n), timeout=60))
            ob.close(timeout=30)
        finally:
            ob.ensure_dead()
    assert len(ledger.acked) == n and not ledger.errors
    return ledger


def item_n(item: dict) -> int | None:
    ext = (item.get("user") or {}).get("externalId", "")
    return int(ext[1:]) if ext.startswith("n") and ext[1:].isdigit() else None


def item_matches(item: dict, method: str, params: dict) -> str | None:
    """None if `item` is exactly what `params` asked to save, else why not."""
    def differ(field: str, got: Any, want: Any) -> str | None:
        return None if strict_equal(got, want) else f"{field}: stored {got!r}, sent {want!r}"

    kinds = {"saveCustomEvent": "customEvent", "saveCustomAttribute": "customAttribute", "saveUserAttribute": "userAttribute"}
    checks = [differ("kind", item.get("kind"), kinds[method]), differ("user", item.get("user"), params.get("user"))]
    if "id" in params:
        checks.append(differ("id", item.get("id"), params["id"]))
    if method == "saveCustomEvent":
        checks += [
            differ("name", item.get("name"), params["name"]),
            differ("properties", item.get("properties"), params.get("properties", {})),
        ]
    elif method == "saveCustomAttribute":
        checks += [
            differ("key", item.get("key"), params["key"]),
            differ("op", item.get("op"), params.get("op", "set")),
            differ("value", item.get("value"), params["value"]),
        ]
    else:
        checks += [differ("field", item.get("field"), params["field"]), differ("value", item.get("value"), params["value"])]
    problems = [c for c in checks if c]
    return "; ".join(problems) if problems else None


def check_invariants(items: list[dict], ledger: Ledger, allowed_extra: set[int] = frozenset()) -> tuple[int, list[str]]:
    """acknowledged ⊆ recovered (same id, seq and typed values), no duplicates, recovered ⊆ sent.

    Returns (number of acknowledged items lost, list of problems)."""
    problems: list[str] = []
    by_n: dict[int, dict] = {}
    seen_ids: set[str] = set()
    seen_seqs: set[int] = set()
    for item in items:
        n = item_n(item)
        if item["id"] in seen_ids:
            problems.append(f"duplicate id {item['id']}")
        if item["seq"] in seen_seqs:
            problems.append(f"duplicate seq {item['seq']}")
        seen_ids.add(item["id"])
        seen_seqs.add(item["seq"])
        if n is None or (n not in ledger.sent and n not in allowed_extra):
            problems.append(f"invented item (never sent): {item}")
            continue
        if n in by_n:
            problems.append(f"request n={n} stored twice: {by_n[n]['id']} and {item['id']}")
        by_n[n] = item
        if n in ledger.sent:
            why = item_matches(item, *ledger.sent[n])
            if why:
                problems.append(f"n={n} id={item['id']}: {why}")
        for key in ("savedAt", "deliveryCount"):
            if key not in item:
                problems.append(f"n={n}: item lacks {key}")
    lost = 0
    for n, (iid, seq) in ledger.acked.items():
        item = by_n.get(n)
        if item is None:
            lost += 1
            problems.append(f"LOST acknowledged save n={n} id={iid} seq={seq}")
        elif item["id"] != iid or item["seq"] != seq:
            problems.append(f"n={n}: acknowledged as id={iid} seq={seq}, recovered as id={item['id']} seq={item['seq']}")
    return lost, problems


