"""Bash approval in ``ask`` mode: the modal, and the turn waiting for the answer."""

from __future__ import annotations

from textual.widgets import Button

from agent.events import ToolResult, ToolStart
from tests.tui.conftest import UI
from tui.screens.approval import ApprovalScreen
from tui.widgets.tool_card import ToolCard


def results(app) -> list[ToolResult]:
    return [e for e in app.runtime.session.events if isinstance(e, ToolResult)]


async def test_allow_once_runs_the_command_and_asks_again(ui: UI) -> None:
    """The modal shows the command in full; the turn waits; allow once asks again next time."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.command == "pwd && ls -la"
        assert "$ pwd && ls -la" in screen.query_one(".command").render().plain
        await pilot.pause(0.2)
        assert results(app) == []  # the turn waits for the answer
        assert any(isinstance(e, ToolStart) for e in app.runtime.session.events)
        assert app.status.activity == "approval"
        await pilot.press("y")
        await ui.until(pilot, lambda: len(results(app)) == 1)
        assert results(app)[0].data.exit_code == 0
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.click("#once")
        await ui.settle(pilot)
        assert [r.data.exit_code for r in results(app)] == [0, 0]
        assert app.runtime.bash.policy == "ask"


async def test_always_switches_the_session_to_auto(ui: UI) -> None:
    """ "Always for this session" runs this and every later command without asking."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "what is here in README.md")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("a")
        await ui.settle(pilot)
        assert app.runtime.bash.policy == "auto"
        assert len(results(app)) == 4 and all(r.data.exit_code == 0 for r in results(app))


async def test_deny_tells_the_model_and_the_card_shows_it(ui: UI) -> None:
    """Deny (button or Esc) returns a refusal to the model; nothing runs."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.click("#deny")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("escape")
        await ui.settle(pilot)
        denied = results(app)
        assert len(denied) == 2
        assert all(r.data.is_error and "declined" in r.data.content for r in denied)
        cards = list(app.query(ToolCard))
        assert all(c.is_error and "declined" in c.output for c in cards)
        assert "error" in cards[0].border_subtitle


async def test_the_modal_buttons_fit_at_80_columns(ui: UI) -> None:
    """At 80×24 the three choices are all on screen."""
    app = ui.app(ui.runtime(approve="ask"))
    async with app.run_test(size=(80, 24)) as pilot:
        await ui.type(pilot, "hi there")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.pause()
        for button in app.screen.query(Button):
            region = button.region
            assert region.width > 0 and region.right <= 80 and region.bottom <= 24, button.id
        await pilot.press("n")
        await ui.until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
        await pilot.press("n")
        await ui.settle(pilot)
