"""Esc and Ctrl+C interrupt a running bash command; Ctrl+C twice quits."""

from __future__ import annotations

import time

from agent.log.events import TurnEnd
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.widgets.entries import Notice
from tui.widgets.tool_card import ToolCard


def sleeper(ui: UI, server: OpenAIServer):
    server.push({"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 30"}}]})
    runtime = ui.runtime(base_url=server.base_url, model="m", demo=False, context_window=32_000)
    return ui.app(runtime)


def turn_end(app) -> TurnEnd | None:
    ends = [e for e in app.runtime.session.events if isinstance(e, TurnEnd)]
    return ends[-1] if ends else None


async def test_esc_interrupts_a_running_bash(ui: UI, openai_server: OpenAIServer) -> None:
    """Esc kills the command; the turn ends ``cancelled`` and the card says so."""
    app = sleeper(ui, openai_server)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "take a nap")
        await ui.until(pilot, lambda: app.runtime.bash.running)
        card = app.query_one(ToolCard)
        assert card.running and card.command == "sleep 30"
        assert app.main.status.activity == "bash"
        started = time.monotonic()
        await pilot.press("escape")
        await ui.settle(pilot)
        assert time.monotonic() - started < 20  # not the command's 30 s (a bound, not a speed)
        end = turn_end(app)
        assert end is not None and end.data.reason == "cancelled"
        assert not app.runtime.bash.running
        assert not card.running and card.is_error and "interrupted" in card.output
        notices = [n.plain for n in app.query(Notice)]
        assert any(text.startswith("Interrupted") for text in notices)
        assert app.main.status.activity == "idle"
        assert len(openai_server.requests) == 1


async def test_ctrl_c_interrupts_then_a_second_quits(ui: UI, openai_server: OpenAIServer) -> None:
    """Ctrl+C stops the turn; pressed again right after, it quits."""
    app = sleeper(ui, openai_server)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "take a nap")
        await ui.until(pilot, lambda: app.runtime.bash.running)
        await pilot.press("ctrl+c")
        await ui.settle(pilot)
        end = turn_end(app)
        assert end is not None and end.data.reason == "cancelled"
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running


async def test_ctrl_c_when_idle_asks_for_a_second(ui: UI) -> None:
    """Idle, the first Ctrl+C only warns; the second quits."""
    app = ui.app()
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        assert any("again to quit" in n.message for n in app._notifications)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
