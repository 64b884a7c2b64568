"""What ``/mcp`` and ``reefline mcp`` say: each MCP server, its state, its tools and what
their schemas cost in tokens, and whether the requests carry those schemas or the deferred
listing. Text only (front ends show it through the terminal sanitizer: tool names and
descriptions, and a failed server's error, are the server's words)."""

from __future__ import annotations

from tools.mcp.deferral import budget
from tools.mcp.hub import McpHub

NONE = (
    "No MCP servers configured. Add one as [mcp_servers.NAME] in the config, e.g.\n"
    '  [mcp_servers.time]\n  command = "mcp-server-time"'
)


def mcp_report(hub: McpHub, window: int | None) -> str:
    """The servers in the config's order, then the schemas' cost and how they are sent."""
    if not hub.servers:
        return NONE
    lines: list[str] = []
    for server in hub.servers.values():
        spec = server.spec
        head = f"{spec.name} · {server.state} · {spec.transport} · {spec.where}"
        if server.state == "failed":
            lines += [head, f"  why: {server.error}"]
            continue
        tools = [t for t in hub.tools().values() if t.server is server]
        if server.state != "ready":
            lines.append(head)
            continue
        cost = hub.count([t.schema() for t in tools])
        lines.append(f"{head} · {len(tools)} tools · {cost:,} tokens of schemas")
        lines += [f"  {t.name}  {hub.count([t.schema()]):,} tokens  {t.summary()}" for t in tools]
        if skipped := hub.skipped(server):
            names = ", ".join(repr(n) for n in skipped)
            lines.append(f"  not offered (a name a model API refuses): {names}")
    lines.append(sending(hub, window))
    return "\n".join(lines)


def sending(hub: McpHub, window: int | None) -> str:
    """How the next request carries the MCP tools, in tokens."""
    full, deferred = hub.cost(deferred=False), hub.cost(deferred=True)
    if not full:
        return "No MCP tools yet (servers still starting, or none ready)."
    limit = budget(window)
    if hub.deferring or full > limit:
        return (
            f"Schemas deferred: each request carries a listing of {deferred:,} tokens instead "
            f"of {full:,} (over the budget of {limit:,}); the model asks mcp_tool_schemas "
            "for those it needs."
        )
    return f"Schemas sent whole: {full:,} tokens a request (budget {limit:,})."
