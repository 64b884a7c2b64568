"""Deferred schemas: when the MCP tools' schemas would cost more than a budget, the request
carries one small tool instead, :data:`SCHEMA_TOOL`, whose description lists each MCP tool
by name and one line, and which returns the full schemas of the tools asked for. Its answer
is an ordinary tool message: nothing earlier in the request changes, so a provider's prompt
cache holds. A call by full name to a tool whose schema was never loaded still runs when its
arguments fit the schema (:func:`tools.mcp.tool.check_arguments`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from tools.base import OutputListener, ToolOutput
from tools.mcp.tool import McpTool

SCHEMA_TOOL = "mcp_tool_schemas"
BUDGET_TOKENS = 1_500
WINDOW_SHARE = 0.05


def budget(window: int | None) -> int:
    """The most the MCP tools' schemas may cost before they are deferred: 1,500 tokens, or
    5% of the window when that is less."""
    if window is None:
        return BUDGET_TOKENS
    return min(BUDGET_TOKENS, int(window * WINDOW_SHARE))


class SchemaTool:
    """``mcp_tool_schemas``: the listing of the deferred tools, and their full schemas on
    request. Reads only what the servers listed: asks no one and runs nothing."""

    name = SCHEMA_TOOL

    def __init__(self, tools: Callable[[], Mapping[str, McpTool]]) -> None:
        self._tools = tools

    def schema(self) -> dict[str, Any]:
        listing: list[str] = []
        server = None
        for tool in self._tools().values():
            if tool.server.name != server:
                server = tool.server.name
                listing.append(f"[{server}]")
            listing.append(f"{tool.listed.name}: {tool.summary()}")
        return {
            "type": "function",
            "function": {
                "name": SCHEMA_TOOL,
                "description": (
                    "Returns the full JSON schemas of MCP tools, to call them by their full "
                    "names, mcp__<server>__<tool>. The tools, by [server]:\n" + "\n".join(listing)
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "names": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Full tool names, e.g. mcp__server__tool.",
                        }
                    },
                    "required": ["names"],
                },
            },
        }

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        names = arguments.get("names")
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return ToolOutput("error: `names` must be a list of tool names.", is_error=True)
        tools = self._tools()
        found = [tools[n].schema()["function"] for n in names if n in tools]
        unknown = [n for n in names if n not in tools]
        text = json.dumps(found, ensure_ascii=False)
        if unknown:
            known = ", ".join(tools) or "none"
            text += f"\nNo MCP tool named {', '.join(unknown)}. The MCP tools: {known}."
        return ToolOutput(text, is_error=not found)
