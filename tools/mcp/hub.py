"""All the MCP servers of a session: started together in the background, their tools
offered to each request (all schemas, or deferred: :mod:`tools.mcp.deferral`), a server that
fails named once. It is a tool source for the loop (:class:`agent.toolbox.ToolSource`)."""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tools.base import OutputListener, Tool, ToolOutput
from tools.mcp.deferral import SCHEMA_TOOL, SchemaTool, budget
from tools.mcp.server import McpServer
from tools.mcp.spec import ServerSpec, server_of, tool_name
from tools.mcp.tool import Gate, McpTool

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
Count = Callable[[list[dict[str, Any]]], int]
"""Prices a list of tool schemas in tokens (the estimator's ``tools_tokens``)."""


class McpHub:
    """The servers of ``specs``; :meth:`start` on the running loop, :meth:`stop` at the end.

    ``notify`` is told, once per server, that it failed (to start, or later) and why; the
    session goes on without it.
    """

    def __init__(
        self,
        specs: Iterable[ServerSpec],
        gate: Gate,
        count: Count,
    ) -> None:
        self.gate = gate
        self.count = count
        self.notify: Callable[[str], None] | None = None
        self._stderr_dir: Path | None = None
        self.servers = {s.name: McpServer(s, self._changed) for s in specs}
        self.deferring = False
        """Sticky: once the schemas went deferred they stay so (a request that switches
        back and forth would break the prompt cache each time)."""
        self._told: set[str] = set()
        self.schema_tool = SchemaTool(self.tools)

    def start(self) -> None:
        """Start every enabled server, in parallel, without waiting for any (needs a running
        loop; a second call does nothing)."""
        asyncio.get_running_loop()  # RuntimeError before anything is made, when none runs
        stdio = any(s.spec.enabled and s.spec.command for s in self.servers.values())
        if self._stderr_dir is None and stdio:
            # The servers' stderr, private to this process (0700), removed at stop(): outside
            # the workspace and the spill folder, which a sandboxed command may write.
            self._stderr_dir = Path(tempfile.mkdtemp(prefix="reefline-mcp-"))
        for server in self.servers.values():
            server.start(self._stderr_dir)

    def tools(self) -> dict[str, McpTool]:
        """Every tool of the servers that are ready, by full name, in the config's order;
        not those whose full name a provider would refuse (:func:`unusable`)."""
        found: dict[str, McpTool] = {}
        for server in self.servers.values():
            if server.state == "ready":
                for listed in server.tools:
                    tool = McpTool(server, listed, self.gate)
                    if not unusable(tool.name):
                        found[tool.name] = tool
        return found

    def skipped(self, server: McpServer) -> list[str]:
        """The tools of ``server`` that are not offered: their names cannot be sent."""
        return [t.name for t in server.tools if unusable(tool_name(server.name, t.name))]

    def cost(self, deferred: bool) -> int:
        """What the MCP tools add to each request, in tokens: all their schemas, or the
        deferred listing (the schema tool)."""
        tools = self.tools()
        if not tools:
            return 0
        if deferred:
            return self.count([self.schema_tool.schema()])
        return self.count([t.schema() for t in tools.values()])

    # --- as a tool source of the loop ---------------------------------------------------------

    def offered(self, window: int | None) -> list[dict[str, Any]]:
        """The schemas the next request carries."""
        tools = self.tools()
        if not tools:
            return []
        schemas = [t.schema() for t in tools.values()]
        if not self.deferring and self.count(schemas) > budget(window):
            self.deferring = True
        return [self.schema_tool.schema()] if self.deferring else schemas

    def find(self, name: str) -> Tool | None:
        """The tool a call names: a ready server's tool, the schema tool while deferring,
        or one that waits for its server when that is still starting (a call can name a
        tool the request did not list)."""
        if name == SCHEMA_TOOL:
            return self.schema_tool if self.deferring else None
        server = self.servers.get(server_of(name) or "")
        if server is None:
            return None
        if server.state == "starting":
            return _Waiting(self, name)
        if server.state == "failed":
            return _Gone(name, f"MCP server `{server.name}` is not running: {server.error}")
        return self.tools().get(name)

    def names(self) -> list[str]:
        return [*self.tools(), *([SCHEMA_TOOL] if self.deferring else [])]

    # --- life ---------------------------------------------------------------------------------

    def _changed(self, server: McpServer) -> None:
        if server.state != "failed" or server.name in self._told:
            return
        self._told.add(server.name)
        if self.notify is not None:
            self.notify(
                f"MCP server `{server.name}` failed: {server.error}. The session goes on "
                "without its tools (/mcp lists the servers)."
            )

    async def settled(self) -> None:
        """Wait until every server is ready or has failed (``reefline mcp``, tests)."""
        await asyncio.gather(*(s.settled() for s in self.servers.values()))

    async def stop(self) -> None:
        """Stop every server and remove their stderr files."""
        await asyncio.gather(*(s.stop() for s in self.servers.values()), return_exceptions=True)
        if self._stderr_dir is not None:
            shutil.rmtree(self._stderr_dir, ignore_errors=True)
            self._stderr_dir = None


def unusable(name: str) -> bool:
    """A function name OpenAI-compatible APIs refuse (they take ``[A-Za-z0-9_-]{1,64}``):
    offering it would fail every request, so the tool is left out (``/mcp`` says so)."""
    return NAME.fullmatch(name) is None


class _Waiting:
    """A call naming a tool of a server still starting: waits for it, then calls the tool."""

    def __init__(self, hub: McpHub, name: str) -> None:
        self.hub = hub
        self.name = name

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "parameters": {}}}

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        server = self.hub.servers[server_of(self.name) or ""]
        self.hub.start()  # started at the first step already: this only makes sure
        await server.settled()
        tool = self.hub.find(self.name)
        if tool is None or isinstance(tool, _Waiting):
            known = ", ".join(self.hub.tools()) or "none"
            return ToolOutput(
                f"error: there is no tool named {self.name!r}. MCP tools: {known}.", is_error=True
            )
        return await tool.run(arguments, on_output)


class _Gone:
    """A call naming a tool of a server that failed: the error says so."""

    def __init__(self, name: str, why: str) -> None:
        self.name = name
        self.why = why

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "parameters": {}}}

    async def run(
        self, arguments: dict[str, Any], on_output: OutputListener | None = None
    ) -> ToolOutput:
        return ToolOutput(f"error: {self.why}", is_error=True)
