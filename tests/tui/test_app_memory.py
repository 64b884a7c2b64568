"""``/remember`` and ``/memory`` in the app: the line and its file shown in a confirmation
before anything is written; the model told from the next request."""

from __future__ import annotations

from textual.widgets import Static

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.choice import ChoiceScreen
from tui.screens.context import ContextScreen
from tui.widgets.entries import Notice


def notices(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [n.plain for n in app.query(Notice)]


async def test_remember_shows_the_line_and_the_file_then_writes_on_yes(
    ui: UI, openai_server: OpenAIServer
) -> None:
    agents = ui.workdir / "AGENTS.md"
    agents.write_text("Run the tests.")  # no newline at the end: the line starts its own
    app = ui.app(ui.runtime(base_url=openai_server.base_url, model="m", demo=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "hello")
        await ui.send(pilot, "/remember never touch vendor/")
        await ui.until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        shown = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "- never touch vendor/" in shown and f"to the end of {agents}" in shown
        assert (
            app.screen.question
            == "Add this line to " + str(agents).replace(str(ui.workdir.home()), "~", 1) + "?"
        )
        await ui.press(pilot, "n")
        await ui.until(pilot, lambda: not isinstance(app.screen, ChoiceScreen))
        assert agents.read_text() == "Run the tests."
        await ui.send(pilot, "/remember never touch vendor/")
        await ui.until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await ui.press(pilot, "y")
        await ui.until(pilot, lambda: agents.read_text().endswith("\n- never touch vendor/\n"))
        await ui.until(pilot, lambda: any("from the next request" in n for n in notices(app)))
        # The transcript shows what the model was sent, the line included.
        assert "context sent to the model: From now on: - never touch vendor/ (" in notices(app)[-1]
        await ui.send(pilot, "/memory")
        assert f"project  {agents}" in notices(app)[-1]
        await ui.send(pilot, "/context")
        await ui.until(pilot, lambda: isinstance(app.screen, ContextScreen))
        lines = [line.plain for line in app.screen.lines]
        assert any(line.startswith(f"project  {agents}  ") for line in lines), lines
        await ui.press(pilot, "escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, ContextScreen))
        await ui.send(pilot, "next")
    first, last = (r["messages"] for r in openai_server.requests)
    assert last[: len(first)] == first
    assert "- never touch vendor/" in last[-2]["content"] and last[-1]["content"] == "next"
