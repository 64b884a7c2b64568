"""A command that changed files: its card says so (``1 file changed +1 −0 · diff``), Enter
on that line opens the diff, whose text is the workspace's and never markup (Pilot against
the loopback server)."""

from __future__ import annotations

from textual.content import Content

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.diff import DiffScreen
from tui.widgets.card_files import CardFiles
from tui.widgets.diff_view import DiffView
from tui.widgets.tool_card import ToolCard


async def test_a_cards_diff_line_opens_the_colored_diff(
    ui: UI, openai_server: OpenAIServer
) -> None:
    (ui.workdir / "app.py").write_text("import os\n")
    openai_server.agent_commands = ["""printf 'x = "[bold red]boom[/]"\\n' >> app.py"""]
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False, sandbox="off")
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "add a line")
        [card] = app.query(ToolCard)
        line = card.query_one(CardFiles)
        assert line.render().plain == "1 file changed +1 −0 · diff"
        line.focus()
        await pilot.pause()
        await pilot.press("enter")
        await ui.until(pilot, lambda: isinstance(app.screen, DiffScreen))
        view = app.screen.query_one(DiffView)
        await ui.until(pilot, lambda: bool(view.parts))  # styled in a thread
        shown = Content("\n").join(list(view.rows()))
        assert '+x = "[bold red]boom[/]"' in shown.plain  # the text itself, not markup
        assert "diff --git a/app.py b/app.py" in shown.plain
        styles = {str(span.style) for span in shown.spans}
        assert any("$success-muted" in s for s in styles)  # the added line is tinted
        assert any("$text-warning" in s for s in styles)  # its string coloured as Python
        await pilot.press("escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, DiffScreen))
