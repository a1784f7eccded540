"""The MCP methods on the wire, over real pipes: version negotiation, the stateless era's `_meta`
rules, protocol errors against tool errors, notifications, and plain JSON-RPC in the same process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import FIXED, MODERN, Session, initialize, meta
from tool_catalog import DOCUMENT

pytestmark = pytest.mark.timeout(60)


def issue_codes(reply: Dict[str, Any]) -> list[str]:
    assert reply["error"]["code"] == -32602, reply
    return [e["code"] for e in reply["error"]["data"]["errors"]]


@pytest.mark.parametrize(
    "asked, answered",
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),  # the handshake's newest: 2026-07-28 has no initialize
        ("1999-01-01", "2025-11-25"),
        ("", "2025-11-25"),
    ],
)
def test_initialize_answers_the_clients_version_or_the_newest(
    session: Session, asked: str, answered: str
) -> None:
    result = initialize(session, asked)["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "push-outbox"
    assert "resultType" not in result


def test_initialize_needs_its_three_params(session: Session) -> None:
    reply = session.call("initialize", {"protocolVersion": 20251125, "capabilities": []})
    assert sorted(issue_codes(reply)) == ["missing", "wrong_type", "wrong_type"]


def test_the_negotiated_version_shapes_tools_and_results(session: Session) -> None:
    initialize(session, "2024-11-05")
    tools = session.call("tools/list")["result"]["tools"]
    assert all(set(t) == {"name", "description", "inputSchema"} for t in tools)
    result = session.call("tools/call", {"name": "status"})["result"]
    assert set(result) == {"content", "isError"}  # no structuredContent before 2025-06-18
    assert json.loads(result["content"][0]["text"])["pending"]["total"] == 0


def test_ping_only_in_the_handshake_era(session: Session) -> None:
    assert session.call("ping")["result"] == {}
    reply = session.call("ping", {"_meta": meta()})
    assert reply["error"]["code"] == -32601 and reply["error"]["data"] == {"method": "ping"}


def test_stateless_requests_need_capabilities_and_a_served_version(session: Session) -> None:
    no_caps = {"io.modelcontextprotocol/protocolVersion": MODERN}
    assert issue_codes(session.call("tools/list", {"_meta": no_caps})) == ["missing"]
    not_string = {**meta(), "io.modelcontextprotocol/protocolVersion": 7}
    assert issue_codes(session.call("tools/list", {"_meta": not_string})) == ["wrong_type"]
    for version in ("2025-11-25", "2026-07-29"):
        reply = session.call("tools/call", {"name": "status", "_meta": meta(version)})
        assert reply["error"] == {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": [MODERN], "requested": version},
        }


def test_server_discover(session: Session) -> None:
    result = session.call("server/discover", {"_meta": meta()})["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"] == [MODERN]
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["ttlMs"] > 0 and result["cacheScope"] == "public"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "push-outbox"
    # Without the per-request fields it is malformed (RequestParams requires `_meta`).
    assert issue_codes(session.call("server/discover")) == ["missing"]


def test_stateless_results_carry_result_type_and_server_info(session: Session) -> None:
    result = session.call("tools/call", {"name": "status", "arguments": {}, "_meta": meta()})[
        "result"
    ]
    assert result["resultType"] == "complete"
    assert (
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["version"]
        == result["structuredContent"]["version"]
    )
    assert result["isError"] is False


def test_malformed_calls_are_protocol_errors(session: Session) -> None:
    initialize(session)
    assert issue_codes(session.call("tools/call", {})) == ["missing"]
    assert issue_codes(session.call("tools/call", {"name": 1})) == ["wrong_type"]
    assert issue_codes(session.call("tools/call", {"name": "status", "arguments": [1]})) == [
        "wrong_type"
    ]
    assert issue_codes(session.call("tools/call", {"name": "tools/call"})) == ["unknown_tool"]
    # The methods without a tool (test_catalog.py checks which they are).
    for protocol in [m["name"] for m in DOCUMENT["methods"] if "x-mcp-annotations" not in m]:
        assert issue_codes(session.call("tools/call", {"name": protocol})) == ["unknown_tool"]
    assert issue_codes(session.call("tools/call", ["status"])) == ["positional_params"]
    assert issue_codes(session.call("tools/list", {"cursor": "x"})) == ["invalid_cursor"]


def test_tool_errors_are_results_with_the_json_rpc_error(session: Session) -> None:
    """A tool's refusal is `isError: true` with the error the JSON-RPC call gets, byte for byte."""
    initialize(session)
    for name, arguments in [
        ("saveCustomEvent", {"name": "x" * 300}),
        ("saveCustomEvent", {"name": "a", "nope": 1}),
        ("ackFlush", {"flushId": "none"}),
        ("flushPending", {"max": -1}),
        ("deliverPending", {}),
    ]:
        as_tool = session.call("tools/call", {"name": name, "arguments": arguments})["result"]
        plain = session.call(name, arguments)
        assert as_tool["isError"] is True and "structuredContent" not in as_tool
        assert json.loads(as_tool["content"][0]["text"]) == plain["error"]


def test_duplicate_keys_inside_arguments_are_refused_like_params(session: Session) -> None:
    initialize(session)
    session.proc.stdin.write(  # type: ignore[union-attr]
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"saveCustomEvent",'
        b'"arguments":{"name":"a","properties":{"k":1,"k":2}}}}\n'
    )
    session.proc.stdin.flush()  # type: ignore[union-attr]
    result = session.read()["result"]
    error = json.loads(result["content"][0]["text"])
    assert result["isError"] is True and error["data"]["errors"][0]["code"] == "duplicate_key"
    assert error["data"]["errors"][0]["path"] == "properties.k"


def test_notifications_run_and_are_never_answered(session: Session) -> None:
    session.notify("notifications/initialized")
    session.notify("notifications/cancelled", {"requestId": 1, "reason": "gone"})
    session.notify("tools/call", {"name": "saveCustomEvent", "arguments": {"name": "quiet"}})
    session.notify("tools/call", {"name": "nope"})
    session.notify("initialize", {})
    status = session.call("status")["result"]
    assert status["pending"]["total"] == 1


def test_plain_json_rpc_and_mcp_share_one_process(session: Session) -> None:
    initialize(session)
    saved = session.call("saveCustomEvent", {"name": "plain"})["result"]
    tool = session.call("tools/call", {"name": "flushPending", "arguments": {}})["result"]
    assert [i["id"] for i in tool["structuredContent"]["items"]] == [saved["id"]]
    assert session.call("rpc.discover")["result"]["info"]["title"] == "push-outbox"
    assert session.close() == 0


def test_a_save_through_a_tool_is_journaled_before_its_reply(binary: Path, tmp_path: Path) -> None:
    """The reply to a save made through tools/call comes after its journal record: SIGKILL at once
    after the reply loses nothing."""
    store = tmp_path / "store"
    s = Session(binary, "--store", str(store), *FIXED)
    ids = []
    for n in range(20):
        result = s.call("tools/call", {"name": "saveCustomEvent", "arguments": {"name": f"e{n}"}})[
            "result"
        ]
        ids.append(result["structuredContent"]["id"])
    s.proc.kill()
    s.proc.wait()
    again = Session(binary, "--store", str(store))
    items = again.call("flushPending")["result"]["items"]
    assert [i["id"] for i in items] == ids
    assert again.close() == 0


def test_a_key_repeated_in_the_call_itself_is_a_protocol_error(session: Session) -> None:
    initialize(session)
    session.proc.stdin.write(  # type: ignore[union-attr]
        b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"status","name":"ackFlush"}}\n'
    )
    session.proc.stdin.flush()  # type: ignore[union-attr]
    reply = session.read()
    assert issue_codes(reply) == ["duplicate_key"]
    assert reply["error"]["data"]["errors"][0]["path"] == "name"
