"""The MCP servers of the settings as a tool source of the agent: the one place the core
builds the client (:mod:`tools.mcp`) for a session."""

from __future__ import annotations

from agent.loop import Agent
from agent.mcp_config import server_specs
from agent.settings import Settings
from agent.tokens import Estimator
from tools.bash import BashTool
from tools.mcp.hub import McpHub
from tools.mcp.tool import Gate
from tools.spill import SpillFolder


def mcp_hub(settings: Settings, bash: BashTool, spill: SpillFolder, estimator: Estimator) -> McpHub:
    """The hub of ``settings.mcp_servers`` (it starts nothing yet: see :meth:`McpHub.start`).
    Its calls follow the bash tool's approval policy and approver, read at each call."""
    gate = Gate(policy=lambda: bash.policy, approver=lambda: bash.approver, spill=spill)
    return McpHub(server_specs(settings.mcp_servers), gate, estimator.tools_tokens)


def attach(hub: McpHub, agent: Agent) -> None:
    """Offer the hub's tools to ``agent``'s requests and say its failures as its notices;
    the servers start at the first step at the latest (a front end starts them sooner)."""
    if not hub.servers:
        return
    agent.tool_sources.append(hub)
    hub.notify = agent.notify

    async def start() -> None:
        hub.start()

    agent.hooks.prepare.append(start)
