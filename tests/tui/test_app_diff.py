"""A command that changed files: its card says so (``1 file changed +1 −0 · diff``), Enter
on that line opens the diff, whose text is the workspace's and never markup (Pilot against
the loopback server)."""

from __future__ import annotations

from typing import Any

import pytest
from textual.content import Content
from textual.pilot import Pilot

from tests.e2e.test_diff_secrets import KEY, WRITE_KEY
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.diff import LINES_PER_FILE, DiffScreen
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


async def open_diff(ui: UI, pilot: Pilot[Any], prompt: str) -> DiffView:
    """Send ``prompt`` (its command changes files), open the diff from the card's line, and
    wait for the first part of it to be styled."""
    app = pilot.app
    await ui.send(pilot, prompt)
    [card] = app.query(ToolCard)
    card.query_one(CardFiles).focus()
    await pilot.pause()
    await pilot.press("enter")
    await ui.until(pilot, lambda: isinstance(app.screen, DiffScreen))
    view = app.screen.query_one(DiffView)
    await ui.until(pilot, lambda: bool(view.parts))  # styled in a worker thread
    return view


async def test_the_diff_screen_masks_the_key_a_command_wrote(
    ui: UI, openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the command's output is masked (``***``), so is the key in the patch."""
    monkeypatch.setenv("DIFF_SCREEN_KEY", KEY)
    openai_server.agent_commands = [WRITE_KEY]
    runtime = ui.runtime(
        base_url=openai_server.base_url,
        model="m",
        demo=False,
        sandbox="off",
        api_key_env="DIFF_SCREEN_KEY",
    )
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_diff(ui, pilot, "write the settings")
        assert (ui.workdir / "settings.env").read_text() == f"token={KEY}\n"
        shown = "\n".join(row.plain for row in view.rows())
        assert "+token=***" in shown and KEY not in shown, shown
        assert KEY not in app.export_screenshot()


async def test_a_150k_line_file_opens_its_diff_bounded_and_the_screen_keeps_answering(
    ui: UI, openai_server: OpenAIServer
) -> None:
    """The first 2,000 lines of the file are styled (in a thread) and shown, with a row
    saying how many more; ``a`` shows them all at once, each row styled (in a thread) as it
    comes into view: the key that goes to the end is answered while most of the patch is
    not styled, and the last line gets its colours once it is in view."""
    openai_server.agent_commands = ["seq 1 150000 > big.py"]
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False, sandbox="off")
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_diff(ui, pilot, "make a big file")
        [part] = view.parts
        rows = list(view.rows())
        assert len(rows) == LINES_PER_FILE + 1 and view.styled == LINES_PER_FILE
        more = len(part.lines) - LINES_PER_FILE  # 150,000 lines and the header's 6
        assert rows[-1].plain == f"⋯ {more:,} more lines of big.py · a shows all, or click here"
        assert "a shows all" in str(view.parent.border_subtitle)

        await pilot.press("a")
        assert view.hidden == 0 and sum(1 for _ in view.rows()) == len(part.lines)
        await pilot.press("end")
        assert view.scroll_offset.y == view.max_scroll_y > 0
        assert view.styled < len(part.lines) // 2  # answered long before all was styled
        last = len(part.lines) - 1
        await ui.until(pilot, lambda: last in part.styled)  # styled in view, in a thread
        assert view.row(last).plain == "+150000"
        styles = {str(span.style) for span in view.row(last).spans}
        assert any("$text-secondary" in s and "$success-muted" in s for s in styles)  # a number
        await pilot.press("escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, DiffScreen))


async def test_a_click_on_the_more_row_shows_the_rest_of_that_file(
    ui: UI, openai_server: OpenAIServer
) -> None:
    openai_server.agent_commands = ["seq 1 2500 > mid.py"]
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False, sandbox="off")
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_diff(ui, pilot, "make a file")
        [part] = view.parts
        await pilot.press("end")
        more = sum(1 for _ in view.rows()) - 1
        assert view.row(more).plain.startswith("⋯ 506 more lines of mid.py")
        await pilot.click(view, offset=(3, more - view.scroll_offset.y))
        assert view.hidden == 0 and sum(1 for _ in view.rows()) == len(part.lines) == 2506
        assert "a shows all" not in str(view.parent.border_subtitle)
        await pilot.press("end")
        await ui.until(pilot, lambda: 2505 in part.styled)
        assert view.row(2505).plain == "+2500"
