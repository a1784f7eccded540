"""Checks a reply to an MCP request (Protocol/README.md, "MCP") against the MCP specification's
own result shapes: the wire models the official SDK (PyPI `mcp`) generates from the
specification's schema.json for 2025-11-25 and 2026-07-28. A `tools/call` result is checked
further by the caller: `structuredContent` against the tool's method result schema in
openrpc.json, an `isError` text against its error table.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import mcp_types._v2025_11_25 as handshake
import mcp_types._v2026_07_28 as stateless
from pydantic import BaseModel, ValidationError

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"

# method → (result model in the handshake era, in the stateless era); None: not in that era.
RESULTS: Dict[str, Tuple[Optional[type[BaseModel]], Optional[type[BaseModel]]]] = {
    "initialize": (handshake.InitializeResult, None),
    "ping": (handshake.EmptyResult, None),
    "server/discover": (None, stateless.DiscoverResult),
    "tools/list": (handshake.ListToolsResult, stateless.ListToolsResult),
    "tools/call": (handshake.CallToolResult, stateless.CallToolResult),
}
# `notifications/cancelled` is in openrpc.json: the long calls' cancel serves both protocols.
METHODS = set(RESULTS) | {"notifications/initialized"}
# Errors MCP defines beyond JSON-RPC's (2026-07-28 basic/index, "Error Codes").
MCP_ERRORS = {-32022: "Unsupported protocol version"}


def is_stateless(request: Dict[str, Any]) -> bool:
    params = request.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and VERSION_KEY in meta


def _model_problems(model: type[BaseModel], value: Any) -> List[str]:
    try:
        model.model_validate(value)
    except ValidationError as e:
        return [
            f"{model.__module__.rsplit('.', 1)[-1]}.{model.__name__}: {err['loc']} {err['msg']}"
            for err in e.errors()
        ]
    return []


def problems(
    response: Dict[str, Any],
    request: Dict[str, Any],
    tool_result: Callable[[str, Any], List[str]],
    tool_error: Callable[[Any, str], List[str]],
    error: Callable[[Any, Optional[str]], List[str]],
) -> List[str]:
    """Problems with `response` to the MCP `request`. `tool_result(method, value)` and
    `tool_error(error, method)` check a tool's outcome against openrpc.json; `error(error, None)` a
    JSON-RPC error object against the error table."""
    method = request["method"]
    era = is_stateless(request)
    if "error" in response:
        code = response["error"].get("code") if isinstance(response["error"], dict) else None
        if code in MCP_ERRORS:
            return _model_problems(stateless.UnsupportedProtocolVersionError, response)
        return error(response["error"], None)
    result = response["result"]
    model = RESULTS[method][1 if era else 0]
    if model is None:
        return [f"{method} answered with a result in the {'stateless' if era else 'handshake'} era"]
    found = _model_problems(model, result)
    if era and result.get("resultType") != "complete":
        found.append("a stateless-era result needs resultType: complete")
    if not era and "resultType" in result:
        found.append("a handshake-era result has no resultType")
    if method == "tools/call":
        found += _tool_problems(result, request, tool_result, tool_error)
    return found


def _tool_problems(
    result: Dict[str, Any],
    request: Dict[str, Any],
    tool_result: Callable[[str, Any], List[str]],
    tool_error: Callable[[Any, str], List[str]],
) -> List[str]:
    name = request["params"]["name"]
    content = result.get("content")
    if not (isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text"):
        return [f"a tool result has one text content item, not {content!r}"]
    text = json.loads(content[0]["text"])
    if result.get("isError"):
        if "structuredContent" in result:
            return ["an isError result has no structuredContent"]
        return [f"{name} isError: {p}" for p in tool_error(text, name)]
    if "structuredContent" in result and result["structuredContent"] != text:
        return ["structuredContent differs from the text item"]
    return [f"{name} result: {p}" for p in tool_result(name, text)]
