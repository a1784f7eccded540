"""Clients/editors/README.md, "Use from an editor": each client's configuration is valid, and the command line it
gives, run as that client would run it, is an MCP server the official SDK can use."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any, Dict, List, Tuple

import anyio
import pytest
from conftest import REPO
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.timeout(60)


def section() -> str:
    text = (REPO / "Clients" / "editors" / "README.md").read_text(encoding="utf-8")
    start = text.index("## Use from an editor")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def command_lines() -> List[Tuple[str, List[str]]]:
    """(client, argv) for every configuration in the section."""
    found = []
    for block in re.findall(r"```json\n(.*?)```", section(), re.S):
        config: Dict[str, Any] = json.loads(block)
        (key, servers), *_ = config.items()
        server = servers["push-outbox"]
        found.append((key, [server["command"], *server["args"]]))
    for block in re.findall(r"```sh\n(.*?)```", section(), re.S):
        words = shlex.split(block)
        assert words[:3] == ["claude", "mcp", "add"], block
        found.append(("claude mcp add", words[words.index("--") + 1 :]))
    return found


def test_the_section_shows_the_four_clients() -> None:
    assert [client for client, _ in command_lines()] == [
        "servers",
        "mcpServers",
        "context_servers",
        "claude mcp add",
    ]


@pytest.mark.parametrize("client, argv", command_lines(), ids=[c for c, _ in command_lines()])
def test_each_command_line_serves_mcp(
    binary: Path, tmp_path: Path, client: str, argv: List[str]
) -> None:
    assert argv[0] == "push-outbox" and argv[1] == "--store"
    store = tmp_path / "store"  # stands for ${workspaceFolder}/…, $PWD/… and /absolute/path/to/…
    args = [str(store), *argv[3:]]

    async def main() -> None:
        params = StdioServerParameters(command=str(binary), args=["--store", *args])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = [t.name for t in (await s.list_tools()).tools]
            assert "saveCustomEvent" in names and "rpc.discover" not in names
            result = await s.call_tool(
                "saveCustomEvent", {"name": "from_" + client.replace(" ", "_")}
            )
            assert result.is_error is False

    anyio.run(main)
    assert (store / "checkpoint.json").exists() or any(store.iterdir())
