"""`tools/list` is what Protocol/openrpc.json makes, in every version (tool_catalog.py, written
independently of the Swift code), and every schema in it stands alone as a JSON Schema 2020-12."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from conftest import Session, initialize, meta
from jsonschema import Draft202012Validator
from tool_catalog import DOCUMENT, VERSIONS, tools

pytestmark = pytest.mark.timeout(60)


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref":
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


@pytest.mark.parametrize("version", VERSIONS[:-1])
def test_handshake_tools_list_equals_the_generator(binary: Path, version: str) -> None:
    s = Session(binary, "--memory")
    assert initialize(s, version)["result"]["protocolVersion"] == version
    result = s.call("tools/list")["result"]
    assert set(result) == {"tools"}
    assert result["tools"] == tools(version)
    assert s.close() == 0


def test_stateless_tools_list_equals_the_generator(binary: Path) -> None:
    s = Session(binary, "--memory")
    result = s.call("tools/list", {"_meta": meta()})["result"]
    assert result.pop("tools") == tools("2026-07-28")
    assert result.pop("resultType") == "complete"
    assert result.pop("ttlMs") >= 0 and result.pop("cacheScope") == "public"
    assert set(result) == {"_meta"}
    assert s.close() == 0


def test_tools_are_the_wire_methods_but_the_protocol_ones_in_document_order() -> None:
    assert [t["name"] for t in tools()] == [
        "parsePayload",
        "saveCustomEvent",
        "saveCustomAttribute",
        "saveUserAttribute",
        "flushPending",
        "ackFlush",
        "releaseFlush",
        "status",
        "listDeadLetters",
        "requeueDeadLetters",
        "dropDeadLetters",
        "deliverPending",
        "importLegacy",
    ]
    protocol = {m["name"] for m in DOCUMENT["methods"] if "x-mcp-annotations" not in m}
    assert protocol == {
        "rpc.discover",
        "$/cancelRequest",
        "notifications/cancelled",
        "shutdown",
        "exit",
    }


def test_every_schema_is_a_self_contained_2020_12_schema() -> None:
    for tool in tools():
        for key in ("inputSchema", "outputSchema"):
            schema = tool[key]
            Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object", (tool["name"], key)
            for ref in _refs(schema):
                assert ref.startswith("#/$defs/") and ref[8:] in schema.get("$defs", {}), (
                    tool["name"],
                    ref,
                )


def test_every_tool_has_annotations_with_only_the_four_hints() -> None:
    hints = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
    by_name = {t["name"]: t["annotations"] for t in tools()}
    for name, hint_set in by_name.items():
        assert set(hint_set) <= hints and all(isinstance(v, bool) for v in hint_set.values()), name
        if not hint_set.get("readOnlyHint"):
            # destructiveHint defaults to true (MCP ToolAnnotations): say it for every writer.
            assert "destructiveHint" in hint_set, name
    assert {n for n, a in by_name.items() if a.get("readOnlyHint")} == {
        "parsePayload",
        "status",
        "listDeadLetters",
    }
    assert {n for n, a in by_name.items() if a.get("destructiveHint")} >= {"dropDeadLetters"}
    assert by_name["deliverPending"]["openWorldHint"] is True


def test_examples_validate_against_the_tool_schemas() -> None:
    """Every OpenRPC example's params and result fit the tool's inputSchema and outputSchema."""
    by_name = {t["name"]: t for t in tools()}
    for method in DOCUMENT["methods"]:
        tool = by_name.get(method["name"])
        if tool is None:
            continue
        for example in method.get("examples", []):
            if "result" not in example:
                continue
            args = {p["name"]: p["value"] for p in example["params"]}
            problems = list(Draft202012Validator(tool["inputSchema"]).iter_errors(args))
            problems += Draft202012Validator(tool["outputSchema"]).iter_errors(
                example["result"]["value"]
            )
            assert not problems, (
                f"{method['name']}:{example['name']}: {[p.message for p in problems]}"
            )


def test_the_generator_sees_a_recursive_component() -> None:
    """At least one tool needs `$defs` (nested attributes refer to themselves): the case is exercised."""
    assert any("$defs" in t["inputSchema"] for t in tools()), json.dumps(
        [t["name"] for t in tools()]
    )
