"""The ``edit`` tool in the app, against the loopback server: the approval dialog shows the
diff of exactly what will be written, coloured as the diff screen colours it; the card says
what changed; the diff screen and a denial behave as for a command."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.content import Content

from agent.log.events import ToolResult
from tests.e2e.test_diff_secrets import KEY
from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tests.tui.test_app_approval import Clock
from tui.screens.choice import ChoiceScreen
from tui.screens.diff import DiffScreen
from tui.screens.edit_approval import EditApprovalScreen
from tui.screens.rewind import RewindScreen
from tui.widgets.card_files import CardFiles
from tui.widgets.diff_view import DiffView
from tui.widgets.tool_card import ToolCard

EDIT = {"path": "app.py", "old_string": "y = 2", "new_string": "y = 3"}


def results(app) -> list[ToolResult]:  # type: ignore[no-untyped-def]
    return [e for e in app.runtime.session.events if isinstance(e, ToolResult)]


def edit_runtime(ui: UI, server: OpenAIServer):  # type: ignore[no-untyped-def]
    server.push({"tool_calls": [{"name": "edit", "arguments": EDIT}]})
    server.push({"text": "done"})
    return ui.runtime(
        base_url=server.base_url, model="m", demo=False, context_window=32_000, approve="ask"
    )


async def test_the_dialog_shows_the_coloured_diff_and_the_card_what_changed(
    ui: UI, openai_server: OpenAIServer, workdir: Path
) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    app = ui.app(edit_runtime(ui, openai_server))
    clock = app.approver.clock = Clock()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "bump y")
        await ui.until(pilot, lambda: isinstance(app.screen, EditApprovalScreen))
        screen = app.screen
        assert isinstance(screen, EditApprovalScreen)
        rows = list(screen.query_one(DiffView).rows())
        assert [row.plain for row in rows] == [
            "diff --git a/app.py b/app.py",
            "--- a/app.py",
            "+++ b/app.py",
            "@@ -1,2 +1,2 @@",
            " x = 1",
            "-y = 2",
            "+y = 3",
        ]
        added = rows[-1]
        assert any("$text-success" in str(span.style) for span in added.spans)
        assert "changes app.py (+1 −1)" in screen.query_one(".where").render().plain
        assert (workdir / "app.py").read_text() == "x = 1\ny = 2\n"  # nothing before "y"
        clock.pause()
        await ui.until(pilot, lambda: screen.armed)
        await pilot.press("y")
        clock.pause()
        await ui.until(pilot, lambda: len(results(app)) == 1)
        await ui.settle(pilot)
        assert (workdir / "app.py").read_text() == "x = 1\ny = 3\n"
        card = app.query_one(ToolCard)
        assert card._border_title is not None and card._border_title.plain == "edit app.py"
        files = card.query_one(CardFiles)
        assert files.render().plain == "1 file changed +1 −1 · diff"
        assert card._outcome().plain.startswith("done")
        files.focus()
        await pilot.pause()
        await pilot.press("enter")  # the card's diff: the diff screen, as for a command
        await ui.until(pilot, lambda: isinstance(app.screen, DiffScreen))
        view = app.screen.query_one(DiffView)
        await ui.until(pilot, lambda: bool(view.parts))
        assert "-y = 2\n+y = 3" in Content("\n").join(list(view.rows())).plain
        await pilot.press("escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, DiffScreen))
        # /rewind to before the prompt, conversation and files: the edit is undone.
        parent = app.runtime.session.id
        await ui.type(pilot, "/rewind")
        await ui.until(pilot, lambda: isinstance(app.screen, RewindScreen))
        await pilot.press("enter")
        await ui.until(pilot, lambda: isinstance(app.screen, ChoiceScreen))
        await pilot.press("down", "enter")
        await ui.until(pilot, lambda: app.runtime.session.id != parent)
        await ui.settle(pilot)
        await ui.until(pilot, lambda: app.main.status.activity == "idle")
        assert (workdir / "app.py").read_text() == "x = 1\ny = 2\n"


async def test_denied_in_the_dialog_nothing_is_written(
    ui: UI, openai_server: OpenAIServer, workdir: Path
) -> None:
    (workdir / "app.py").write_text("x = 1\ny = 2\n")
    app = ui.app(edit_runtime(ui, openai_server))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "bump y")
        await ui.until(pilot, lambda: isinstance(app.screen, EditApprovalScreen))
        await pilot.press("escape")
        await ui.until(pilot, lambda: len(results(app)) == 1)
        await ui.settle(pilot)
        assert results(app)[0].data.is_error
        assert "declined" in results(app)[0].data.content
        assert (workdir / "app.py").read_text() == "x = 1\ny = 2\n"


async def test_the_dialog_masks_the_key_the_file_holds(
    ui: UI, openai_server: OpenAIServer, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file being edited holds the session's key (a .env): the diff in the dialog shows
    it masked, as the diff screen would; the file keeps its bytes."""
    monkeypatch.setenv("EDIT_DIALOG_KEY", KEY)
    (workdir / "settings.env").write_text(f"token={KEY}\ndebug=0\n")
    arguments = {"path": "settings.env", "old_string": "debug=0", "new_string": "debug=1"}
    openai_server.push({"tool_calls": [{"name": "edit", "arguments": arguments}]})
    openai_server.push({"text": "done"})
    runtime = ui.runtime(
        base_url=openai_server.base_url,
        model="m",
        demo=False,
        approve="ask",
        api_key_env="EDIT_DIALOG_KEY",
    )
    app = ui.app(runtime)
    clock = app.approver.clock = Clock()
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "turn debug on")
        await ui.until(pilot, lambda: isinstance(app.screen, EditApprovalScreen))
        shown = "\n".join(row.plain for row in app.screen.query_one(DiffView).rows())
        assert " token=***" in shown and KEY not in shown, shown
        assert KEY not in app.export_screenshot()
        clock.pause()
        await ui.until(pilot, lambda: app.screen.armed)
        await pilot.press("y")
        clock.pause()
        await ui.until(pilot, lambda: len(results(app)) == 1)
        await ui.settle(pilot)
    assert (workdir / "settings.env").read_text() == f"token={KEY}\ndebug=1\n"
