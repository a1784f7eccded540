"""The MCP tool list, made from Protocol/openrpc.json on its own (no code shared with the binary).

The rules, as Protocol/README.md ("MCP") states them: one tool per method with `x-mcp-annotations`
(all but `rpc.discover` and the cancel notifications), in the document's order; `description` is the summary, a blank line and the description;
`inputSchema` an object of the params (each param's schema with the param's description),
`required` as the params say and `additionalProperties: false`; `outputSchema` the result schema
with `"type": "object"` added at the root when it has no `type`; `annotations` the method's
`x-mcp-annotations`. References to `#/components/schemas/X` are replaced by X, except for
components that can reach themselves: those go to the schema's `$defs`.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Dict, List, Set

REPO = Path(__file__).resolve().parents[2]
DOCUMENT: Dict[str, Any] = json.loads((REPO / "Protocol/openrpc.json").read_text(encoding="utf-8"))
PREFIX = "#/components/schemas/"
DATA_KEYS = {"examples", "enum", "const", "default"}
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def _refs(schema: Any) -> Set[str]:
    if isinstance(schema, list):
        return set().union(*(_refs(s) for s in schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(PREFIX):
        return {ref[len(PREFIX) :]}
    return set().union(set(), *(_refs(v) for k, v in schema.items() if k not in DATA_KEYS))


def _recursive(components: Dict[str, Any]) -> Set[str]:
    graph = {name: _refs(schema) for name, schema in components.items()}
    found = set()
    for start in graph:
        seen: Set[str] = set()
        stack = list(graph[start])
        while stack:
            name = stack.pop()
            if name == start:
                found.add(start)
                break
            if name not in seen:
                seen.add(name)
                stack.extend(graph.get(name, ()))
    return found


class Inliner:
    def __init__(self, document: Dict[str, Any]) -> None:
        self.components: Dict[str, Any] = document["components"]["schemas"]
        self.recursive = _recursive(self.components)

    def inline(self, schema: Any, defs: Dict[str, Any]) -> Any:
        if isinstance(schema, list):
            return [self.inline(s, defs) for s in schema]
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(PREFIX):
            name = ref[len(PREFIX) :]
            if name not in self.recursive:
                return self.inline(self.components[name], defs)
            if name not in defs:
                defs[name] = None
                defs[name] = self.inline(self.components[name], defs)
            return {"$ref": "#/$defs/" + name}
        return {
            k: (copy.deepcopy(v) if k in DATA_KEYS else self.inline(v, defs))
            for k, v in schema.items()
        }


def _tool(method: Dict[str, Any], inliner: Inliner) -> Dict[str, Any]:
    description = method.get("summary", "")
    if method.get("description"):
        description = (description + "\n\n" if description else "") + method["description"]
    defs: Dict[str, Any] = {}
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for param in method["params"]:
        schema = inliner.inline(param.get("schema", {}), defs)
        if "description" in param and isinstance(schema, dict):
            schema = {**schema, "description": param["description"]}
        properties[param["name"]] = schema
        if param.get("required"):
            required.append(param["name"])
    input_schema: Dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False
    if defs:
        input_schema["$defs"] = defs
    out_defs: Dict[str, Any] = {}
    output_schema = inliner.inline(method["result"]["schema"], out_defs)
    if "type" not in output_schema:
        output_schema = {"type": "object", **output_schema}
    if out_defs:
        output_schema["$defs"] = out_defs
    tool = {
        "name": method["name"],
        "description": description,
        "inputSchema": input_schema,
        "outputSchema": output_schema,
    }
    if "x-mcp-annotations" in method:
        tool["annotations"] = method["x-mcp-annotations"]
    return tool


def tools(version: str = VERSIONS[-1], document: Dict[str, Any] = DOCUMENT) -> List[Dict[str, Any]]:
    """The `tools` array of a `tools/list` answered in protocol `version`."""
    inliner = Inliner(document)
    out = []
    for method in document["methods"]:
        if "x-mcp-annotations" not in method:
            continue  # rpc.discover, $/cancelRequest, notifications/cancelled, shutdown, exit: protocol, not tools
        tool = _tool(method, inliner)
        if VERSIONS.index(version) < VERSIONS.index("2025-06-18"):
            tool.pop("outputSchema")
        if VERSIONS.index(version) < VERSIONS.index("2025-03-26"):
            tool.pop("annotations", None)
        out.append(tool)
    return out
