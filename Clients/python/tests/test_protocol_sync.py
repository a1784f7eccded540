"""The client stays in sync with Protocol/openrpc.json (fails until that file exists)."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict

import pytest
from conftest import OPENRPC_PATH, PROTOCOL_DIR, openrpc_document
from push_outbox import WIRE_METHODS, WIRE_PARAMS, Outbox

pytestmark = pytest.mark.timeout(60)

SCHEMA_DIR = PROTOCOL_DIR / "schema"


def _document() -> Dict[str, Any]:
    doc = openrpc_document()
    assert doc is not None, f"{OPENRPC_PATH} does not exist yet"
    assert isinstance(doc.get("methods"), list), "openrpc.json has no methods[]"
    return doc


def _doc_methods(doc: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {m["name"]: m for m in doc["methods"]}


def _resolve(doc: Dict[str, Any], node: Any) -> Any:
    """Follow a local "$ref" (e.g. to #/components/contentDescriptors/X)."""
    while (
        isinstance(node, dict)
        and isinstance(node.get("$ref"), str)
        and node["$ref"].startswith("#/")
    ):
        target: Any = doc
        for part in node["$ref"][2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _lifecycle(doc: Dict[str, Any]) -> set[str]:
    """The editor lifecycle (`shutdown`, `exit`): the methods openrpc.json marks `x-lifecycle`."""
    return {name for name, method in _doc_methods(doc).items() if method.get("x-lifecycle") is True}


def test_client_wire_methods_equal_openrpc_methods() -> None:
    doc = _document()
    documented = set(_doc_methods(doc))
    client = set(WIRE_METHODS)
    # rpc.discover is OpenRPC's built-in service-discovery method: documents may or may not list it.
    # shutdown and exit are the LSP-style lifecycle an editor drives; the client ends the server's
    # life itself (close(): end of input, then the final snapshot), so it does not offer them.
    lifecycle = _lifecycle(doc)
    assert lifecycle == {"shutdown", "exit"}
    documented_or_builtin = (documented - lifecycle) | {"rpc.discover"}
    assert client == documented_or_builtin, (
        f"only in the client: {sorted(client - documented_or_builtin)}; "
        f"only in openrpc.json: {sorted(documented_or_builtin - client)}"
    )


def test_every_method_has_a_python_method() -> None:
    for wire, py in WIRE_METHODS.items():
        assert callable(getattr(Outbox, py, None)), f"{wire} -> Outbox.{py} missing"


def test_client_params_equal_openrpc_params() -> None:
    doc = _document()
    methods = _doc_methods(doc)
    for wire, params in WIRE_PARAMS.items():
        if wire not in methods:
            continue  # covered by test_client_wire_methods_equal_openrpc_methods
        documented = {_resolve(doc, p)["name"] for p in methods[wire].get("params", [])}
        assert set(params) == documented, (
            f"{wire}: client sends {sorted(params)}, openrpc.json has {sorted(documented)}"
        )
        by_name = methods[wire].get("paramStructure")
        assert by_name in (None, "by-name"), (
            f"{wire}: paramStructure {by_name!r}; the server takes params by name"
        )


def _validator(doc: Dict[str, Any], wire: str):
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT7

    index = [m["name"] for m in doc["methods"]].index(wire)
    result = _resolve(doc, doc["methods"][index]["result"])
    assert "schema" in result, f"{wire}: result has no schema"
    uri = "urn:push-outbox:openrpc"
    registry = Registry().with_resource(
        uri, Resource.from_contents(doc, default_specification=DRAFT7)
    )
    # rpc.discover's result refs the OpenRPC meta-schema: use the copies vendored in Protocol/schema.
    tools_path = SCHEMA_DIR / "json-schema-tools-meta.schema.json"
    openrpc_path = SCHEMA_DIR / "openrpc-1.3.schema.json"
    if tools_path.exists() and openrpc_path.exists():
        tools = DRAFT7.create_resource(json.loads(tools_path.read_bytes()))
        registry = registry.with_resources(
            [
                ("https://meta.json-schema.tools", tools),
                ("https://meta.json-schema.tools/", tools),
                (
                    "https://meta.open-rpc.org/",
                    DRAFT7.create_resource(json.loads(openrpc_path.read_bytes())),
                ),
            ]
        )
    # Point into the document so its "#/components/..." refs resolve against it.
    pointer = f"/methods/{index}/result"
    if "$ref" in doc["methods"][index]["result"]:
        pointer = doc["methods"][index]["result"]["$ref"][1:]
    schema = {"$ref": f"{uri}#{pointer}/schema"}
    return jsonschema.Draft7Validator(schema, registry=registry)


def test_real_results_match_openrpc_result_schemas(spawn: Callable[..., Outbox]) -> None:
    doc = _document()
    methods = _doc_methods(doc)
    ob = spawn()
    results: Dict[str, Any] = {}
    results["status"] = ob.status()
    results["saveCustomEvent"] = ob.save_custom_event(
        "e", properties={"n": 1}, user={"externalId": "u"}
    )
    results["saveCustomAttribute"] = ob.save_custom_attribute("level", 3, user={"externalId": "u"})
    results["saveUserAttribute"] = ob.save_user_attribute(
        "email", "a@example.com", user={"externalId": "u"}
    )
    lease = ob.flush_pending(lease_ms=60_000)
    results["flushPending"] = lease
    results["ackFlush"] = ob.ack_flush(lease["flushId"])
    ob.save_custom_event("again")
    lease2 = ob.flush_pending(lease_ms=60_000)
    results["releaseFlush"] = ob.release_flush(lease2["flushId"])
    results["parsePayload"] = ob.parse_payload({"aps": {"alert": "hi"}, "ab": {"c": "x"}, "k": 1})
    results["rpc.discover"] = ob.discover()
    results["importLegacy"] = ob.import_legacy(
        {"pending_custom_events": [{"event_name": "won", "score": 1}, {"score": 2}]}
    )
    problems = []
    for wire, value in results.items():
        if wire not in methods:
            continue
        validator = _validator(doc, wire)
        for error in validator.iter_errors(value):
            problems.append(f"{wire}: {error.json_path}: {error.message}")
    assert not problems, "\n".join(problems)
