"""``/mcp`` (every front end, through the command layer) and ``reefline mcp`` (starts the
configured servers, waits until each is up or has failed, and reports)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from tui.commands.effects import Effect, Said
from tui.commands.registry import command
from tui.runtime.mcp_report import mcp_report
from tui.runtime.runtime import Runtime


@command("/mcp", "List the MCP servers, their state, tools and what their schemas cost.")
async def _mcp(runtime: Runtime, args: str) -> AsyncIterator[Effect]:
    yield Said(mcp_report(runtime.mcp, runtime.windows.current.tokens))


def run_mcp_listing() -> int:
    """``reefline mcp``: the config's servers, started, then listed. Exit 2 on a bad config."""
    import sys

    from agent.mcp_config import server_specs
    from agent.settings import SettingsError, load_settings
    from agent.tokens import Estimator
    from tools.mcp.hub import McpHub
    from tools.mcp.tool import Gate
    from tools.spill import SpillFolder
    from tui.exit_codes import EXIT_OK, EXIT_USAGE
    from tui.text import clean

    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"reefline: {clean(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    estimator = Estimator(settings.model or "gpt-4.1")
    gate = Gate(policy=lambda: "deny", approver=lambda: None, spill=SpillFolder("/nonexistent"))
    hub = McpHub(server_specs(settings.mcp_servers), gate, estimator.tools_tokens)

    async def listing() -> str:
        hub.start()
        try:
            await hub.settled()
            return mcp_report(hub, settings.context_window)
        finally:
            await hub.stop()

    print(clean(asyncio.run(listing())))
    return EXIT_OK
