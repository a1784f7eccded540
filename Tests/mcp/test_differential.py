"""`tools/call` runs the same code as the JSON-RPC method: seeded random sessions are sent to two
fresh processes with the same fixed clock and id seed, one as plain JSON-RPC calls, the other as
`tools/call`s of the same methods, and every answer must agree: a result is the tool's
`structuredContent` (and its text), an error is the tool's `isError` text."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import FIXED, Session, initialize

pytestmark = pytest.mark.timeout(120)

SEEDS = [int(s) for s in os.environ.get("MCP_DIFF_SEEDS", "1,2,3,4,5").split(",")]


class Calls:
    """Random calls of every tool, valid and not, using the flushIds and item ids seen so far."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.flush_ids: List[str] = []
        self.item_ids: List[str] = []

    def user(self) -> Optional[Dict[str, Any]]:
        return self.rng.choice(
            [None, {"externalId": "u1"}, {"email": "a@example.com"}, {"externalId": ""}]
        )

    def next(self) -> Tuple[str, Dict[str, Any]]:
        r = self.rng
        name = r.choice(
            ["saveCustomEvent"] * 4
            + ["saveCustomAttribute"] * 3
            + ["saveUserAttribute"] * 2
            + ["flushPending"] * 2
            + ["ackFlush", "releaseFlush", "status", "parsePayload", "listDeadLetters"]
            + ["requeueDeadLetters", "dropDeadLetters", "importLegacy", "deliverPending"]
        )
        args: Dict[str, Any] = {}
        if name == "saveCustomEvent":
            args = {"name": r.choice(["push_opened", "", "x" * 256, "e"])}
            if r.random() < 0.5:
                args["properties"] = r.choice(
                    [{"step": r.randint(-5, 5)}, {"$bad": 1}, {"t": "2026-01-01T00:00:00Z"}]
                )
            if r.random() < 0.3:
                args["id"] = r.choice(["c1", "c2", ""])
        elif name == "saveCustomAttribute":
            args = {
                "key": r.choice(["plan", "tags", "$x"]),
                "value": r.choice([1, "pro", [1, 2], {"a": {"b": 1}}, None]),
            }
            if r.random() < 0.4:
                args["op"] = r.choice(["set", "inc", "add", "remove", "unset", "nope"])
        elif name == "saveUserAttribute":
            args = {
                "field": r.choice(["email", "first_name", "country", "bogus"]),
                "value": r.choice(["a@b.co", "US", None, 3]),
            }
        elif name == "flushPending":
            if r.random() < 0.5:
                args["max"] = r.choice([1, 2, 0, -1])
            if r.random() < 0.5:
                args["leaseMs"] = r.choice([1000, 60000, 0])
            if r.random() < 0.3:
                args["format"] = r.choice(["items", "usersTrack", "csv"])
        elif name in ("ackFlush", "releaseFlush"):
            args = {"flushId": r.choice(self.flush_ids + ["unknown"])}
        elif name == "parsePayload":
            args = {"payload": r.choice([{"ab": {"c": "cat"}}, '{"aps":{}}', "not json", 3])}
        elif name in ("requeueDeadLetters", "dropDeadLetters"):
            if r.random() < 0.5:
                args["ids"] = r.sample(self.item_ids, min(len(self.item_ids), 2)) + ["nope"]
        elif name == "importLegacy":
            args = {"pending_custom_events": [{"name": r.choice(["imported", ""])}]}
        user = self.user() if name.startswith("save") and r.random() < 0.5 else None
        if user is not None:
            args["user"] = user
        if r.random() < 0.05:
            args["unknownParam"] = True
        return name, args

    def saw(self, result: Any) -> None:
        if isinstance(result, dict):
            if isinstance(result.get("flushId"), str):
                self.flush_ids.append(result["flushId"])
            if isinstance(result.get("id"), str):
                self.item_ids.append(result["id"])


@pytest.mark.parametrize("seed", SEEDS)
def test_tools_call_answers_as_the_json_rpc_method(binary: Path, seed: int) -> None:
    rng = random.Random(seed)
    plain = Session(binary, "--memory", *FIXED)
    tool = Session(binary, "--memory", *FIXED)
    initialize(tool)
    calls = Calls(rng)
    kinds = {"result": 0, "error": 0}
    for step in range(150):
        name, args = calls.next()
        want = plain.call(name, args)
        got = tool.call("tools/call", {"name": name, "arguments": args})["result"]
        text = json.loads(got["content"][0]["text"])
        where = f"seed {seed} step {step}: {name} {json.dumps(args)}"
        if "result" in want:
            kinds["result"] += 1
            assert got["isError"] is False, where
            assert got["structuredContent"] == want["result"] == text, where
            calls.saw(want["result"])
        else:
            kinds["error"] += 1
            assert got["isError"] is True, where
            assert text == want["error"], where
            assert "structuredContent" not in got, where
    assert plain.call("status")["result"] == tool.call("status")["result"]
    assert plain.close() == 0 and tool.close() == 0
    assert kinds["result"] > 30 and kinds["error"] > 30, kinds
