"""MCP in the app (Pilot): the approval dialog names the server, the tool and the arguments
and says it runs outside the sandbox; "always" holds for that tool only; a server that dies
is named once in a notice and ``/mcp`` lists the servers. Real ``mcp-server-time``."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.log.events import ToolResult, TurnEnd
from tests.mcp.servers import ROOT, TIME
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.approval import ApprovalScreen
from tui.widgets.entries import Notice
from tui.widgets.tool_card import ToolCard


def results(app) -> list[ToolResult]:
    return [e for e in app.runtime.session.events if isinstance(e, ToolResult)]


def asking(app) -> bool:
    return isinstance(app.screen, ApprovalScreen) and app.screen.armed


def notices(app) -> list[str]:
    return [n.plain for n in app.query(Notice)]


def get_time(zone: str, call_id: str) -> dict:
    args = {"timezone": zone}
    return {
        "tool_calls": [{"id": call_id, "name": "mcp__time__get_current_time", "arguments": args}]
    }


async def test_ask_shows_server_tool_and_arguments_and_always_is_per_tool(
    ui: UI, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    openai_server.push(
        get_time("Asia/Tokyo", "c1"),
        get_time("Europe/Paris", "c2"),
        {"tool_calls": [{"id": "c3", "name": "mcp__time__convert_time", "arguments": {
            "source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}}]},
        {"text": "done"},
    )  # fmt: skip
    servers = {
        "time": {"command": TIME},
        "gone": {"command": str(tmp_path / "nothing-here")},
    }
    runtime = ui.runtime(
        approve="ask", base_url=openai_server.base_url, model="m", demo=False,
        context_window=100_000, mcp_servers=servers,
    )  # fmt: skip
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.until(pilot, lambda: any("MCP server `gone` failed" in n for n in notices(app)))
        await ui.type(pilot, "what time is it in Tokyo?")
        await ui.until(pilot, lambda: asking(app))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.asks == "Call this MCP tool?"
        assert "MCP server `time` · tool `get_current_time`" in screen.command
        assert '"timezone": "Asia/Tokyo"' in screen.command
        assert screen.sandbox == "unsandboxed"
        await pilot.press("ctrl+a")  # always: for this tool
        await ui.until(pilot, lambda: asking(app))  # the other tool still asks
        assert "tool `convert_time`" in app.screen.command
        await pilot.press("y")
        await ui.settle(pilot)
        assert len(results(app)) == 3 and not any(r.data.is_error for r in results(app))
        assert "Asia/Tokyo" in results(app)[0].data.content
        # Each card is titled by its tool's name once, then its arguments.
        titles = [str(card.border_title) for card in app.query(ToolCard)]
        assert titles[0].startswith('mcp__time__get_current_time {"timezone"'), titles
        assert all(t.count("mcp__time__") == 1 for t in titles), titles
        assert app.runtime.bash.policy == "ask"  # commands still ask
        assert any("mcp__time__get_current_time runs without asking" in n for n in notices(app))
        assert sum("MCP server `gone` failed" in n for n in notices(app)) == 1
        await ui.type(pilot, "/mcp")
        await ui.until(pilot, lambda: any("time · ready · stdio" in n for n in notices(app)))
        listing = next(n for n in notices(app) if "time · ready · stdio" in n)
        assert "gone · failed" in listing and "mcp__time__convert_time" in listing


async def test_esc_cancels_an_mcp_call_in_flight(
    ui: UI, openai_server: OpenAIServer, tmp_path: Path
) -> None:
    """A call the server never answers: Esc ends it (and the turn), long before its
    tool_timeout_s; the server stays up for the next call."""
    mark = tmp_path / "hanging"
    hang = {
        "command": sys.executable, "args": ["-m", "tests.mcp.fault_server", "hang"],
        "cwd": str(ROOT), "env": {"HANG_MARK": str(mark)}, "tool_timeout_s": 600,
    }  # fmt: skip
    hung = {"tool_calls": [{"id": "c1", "name": "mcp__slowpoke__hang", "arguments": {}}]}
    echo = {"id": "c2", "name": "mcp__slowpoke__echo", "arguments": {"text": "still up"}}
    openai_server.push(hung, {"tool_calls": [echo]}, {"text": "done"})
    runtime = ui.runtime(
        base_url=openai_server.base_url, model="m", demo=False, context_window=100_000,
        mcp_servers={"slowpoke": hang},
    )  # fmt: skip
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hang")
        await ui.until(pilot, mark.exists)
        await pilot.press("escape")
        await ui.settle(pilot)
        ends = [e for e in app.runtime.session.events if isinstance(e, TurnEnd)]
        assert ends and ends[-1].data.reason == "cancelled"
        assert "interrupted" in results(app)[0].data.content
        await ui.type(pilot, "again")
        await ui.until(pilot, lambda: len(results(app)) == 2)
        assert results(app)[1].data.content == "still up"
