"""The official MCP Python SDK (PyPI `mcp`) against the real binary over stdio, in both eras:
`ClientSession` with the `initialize` handshake, and `Client(mode="auto")`, which probes
`server/discover` and stays in the stateless 2026-07-28 era when it answers."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Awaitable, Callable, Dict, List

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from tool_catalog import tools

pytestmark = pytest.mark.timeout(120)

TOOLS = [t["name"] for t in tools()]


def run(fn: Callable[[], Awaitable[None]]) -> None:
    anyio.run(fn)


def error_of(result: CallToolResult) -> Dict[str, Any]:
    """The JSON-RPC error object an `isError` result carries as its text."""
    assert result.is_error is True, result
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    error: Dict[str, Any] = json.loads(result.content[0].text)
    return error


def structured(result: CallToolResult) -> Dict[str, Any]:
    assert result.is_error is False, result
    assert isinstance(result.content[0], TextContent)
    assert json.loads(result.content[0].text) == result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _handshake_session(binary: Path, args: List[str]) -> None:
    params = StdioServerParameters(command=str(binary), args=args)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        init = await s.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "push-outbox"
        assert init.capabilities.tools is not None
        listed = await s.list_tools()
        assert [t.name for t in listed.tools] == TOOLS
        saved = structured(
            await s.call_tool("saveCustomEvent", {"name": "push_opened", "properties": {"step": 1}})
        )
        assert saved["seq"] == 1 and saved["pending"] == 1
        flushed = structured(await s.call_tool("flushPending", {"leaseMs": 60000}))
        assert [i["id"] for i in flushed["items"]] == [saved["id"]]
        assert flushed["items"][0]["properties"] == {"step": 1}
        acked = structured(await s.call_tool("ackFlush", {"flushId": flushed["flushId"]}))
        assert acked == {"acked": 1}
        again = error_of(await s.call_tool("releaseFlush", {"flushId": flushed["flushId"]}))
        assert again["code"] == -32004 and again["data"]["reason"] == "lease_not_found"
        invalid = error_of(await s.call_tool("saveCustomEvent", {"properties": {}}))
        assert invalid["code"] == -32602
        assert [e["code"] for e in invalid["data"]["errors"]] == ["missing"]
        with pytest.raises(MCPError) as unknown:
            await s.call_tool("rpc.discover", {})
        assert unknown.value.code == -32602
        assert unknown.value.error.data["errors"][0]["code"] == "unknown_tool"
        await s.send_ping()


def test_handshake_era_in_memory(binary: Path) -> None:
    run(lambda: _handshake_session(binary, ["--memory"]))


def test_handshake_era_on_a_store_then_plain_json_rpc(binary: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    run(lambda: _handshake_session(binary, ["--store", str(store)]))

    async def save() -> None:
        params = StdioServerParameters(command=str(binary), args=["--store", str(store)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            structured(
                await s.call_tool("saveUserAttribute", {"field": "email", "value": "a@example.com"})
            )

    run(save)
    # The next process, a plain JSON-RPC client: the save made through MCP was journaled.
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "flushPending", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "status"},
    ]
    out = subprocess.run(
        [str(binary), "--store", str(store)],
        input="".join(json.dumps(m) + "\n" for m in lines).encode(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert [i["field"] for i in replies[0]["result"]["items"]] == ["email"]
    assert replies[1]["result"]["pending"]["total"] == 0


def test_stateless_era_with_auto_negotiation(binary: Path) -> None:
    async def main() -> None:
        params = StdioServerParameters(command=str(binary), args=["--memory"])
        async with Client(params, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_info is not None and client.server_info.name == "push-outbox"
            listed = await client.list_tools(cache_mode="bypass")
            assert [t.name for t in listed.tools] == TOOLS
            assert listed.ttl_ms is not None and listed.ttl_ms > 0
            assert listed.cache_scope == "public"
            saved = structured(
                await client.call_tool("saveCustomAttribute", {"key": "plan", "value": "pro"})
            )
            assert saved["pending"] == 1
            status = structured(await client.call_tool("status", {}))
            assert status["pending"]["customAttribute"] == 1
            full = error_of(await client.call_tool("flushPending", {"format": "csv"}))
            assert full["code"] == -32602
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("nope", {})
            assert unknown.value.code == -32602

    run(main)


@pytest.mark.filterwarnings("ignore:ping is removed")
def test_legacy_mode_client(binary: Path) -> None:
    async def main() -> None:
        params = StdioServerParameters(command=str(binary), args=["--memory"])
        async with Client(params, mode="legacy") as client:
            assert client.protocol_version == "2025-11-25"
            await client.send_ping()
            parsed = structured(
                await client.call_tool("parsePayload", {"payload": {"ab": {"c": "cat"}}})
            )
            assert parsed["braze"] is True

    run(main)
