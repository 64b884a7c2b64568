"""Correcting the summary in the app: ``e`` in the summary modal and ``/compact --edit`` open
the editor; ctrl+s saves (the next request carries the text), a text that does not fit is
refused in the editor and kept in a draft file; the panel shows the edit, ``/uncompact``
takes it back, and an undone record is marked undone (the undo row says ``1 item``)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList, Static, TextArea

from tests.openai_server import OpenAIServer
from tests.tui.conftest import UI
from tui.screens.summary import SummaryScreen
from tui.screens.summary_editor import SummaryEditorScreen
from tui.widgets.timeline import TimelinePanel

CORRECTED = "## Primary request and intent\n- CORRECTED-IN-THE-APP-77: use port 8443\n"


def rows(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [str(o.prompt) for o in app.query_one(TimelinePanel).query_one(OptionList).options]


def checkpoint_in(request: dict) -> str:
    [text] = [
        str(m.get("content"))
        for m in request["messages"]
        if "<compacted-summary>" in str(m.get("content"))
    ]
    return text


async def test_e_in_the_summary_modal_edits_the_checkpoint_the_model_then_reads(
    ui: UI, openai_server: OpenAIServer
) -> None:
    openai_server.summarize = True
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False)
    app = ui.app(runtime)
    async with app.run_test(size=(150, 44)) as pilot:
        for n in range(2):
            openai_server.push({"text": f"answer {n} " + "words " * 200})
            await ui.send(pilot, f"question {n} " + "detail " * 200)
        await ui.send(pilot, "/compact")
        panel = app.query_one(TimelinePanel)
        [record] = panel.records
        assert record.status == "done"
        panel.query_one(OptionList).focus()
        await pilot.press("enter")
        await ui.until(pilot, lambda: isinstance(app.screen, SummaryScreen))
        assert "e edits the summary" in str(app.screen.query_one(".dialog").border_subtitle)
        await pilot.press("e")
        await ui.until(pilot, lambda: isinstance(app.screen, SummaryEditorScreen))
        area = app.screen.query_one(TextArea)
        assert area.text == record.summary
        area.load_text(CORRECTED)
        await pilot.press("ctrl+s")
        await ui.until(pilot, lambda: not isinstance(app.screen, SummaryEditorScreen))
        await ui.until(pilot, lambda: len(panel.records) == 2)
        assert panel.records[1].kind == "edit" and "edit" in rows(app)[1]
        openai_server.push({"text": "fine"})
        await ui.send(pilot, "go on")
        assert "CORRECTED-IN-THE-APP-77" in checkpoint_in(openai_server.requests[-1])
        # The modal of the compaction now shows the corrected text the model reads.
        panel.query_one(OptionList).focus()
        panel.query_one(OptionList).highlighted = 0
        await pilot.press("enter")
        await ui.until(pilot, lambda: isinstance(app.screen, SummaryScreen))
        assert "CORRECTED-IN-THE-APP-77" in app.screen.query_one(".summary").source  # type: ignore[attr-defined]
        await pilot.press("escape")
        await pilot.pause()
        # /uncompact takes the edit back: the panel marks it undone, the undo row is 1 item.
        await ui.send(pilot, "/uncompact")
        await ui.until(pilot, lambda: len(panel.records) == 3)
        shown = rows(app)
        assert "undone #3" in shown[1], shown
        assert "1 item" in shown[2] and "1 items" not in shown[2], shown
        openai_server.push({"text": "back"})
        await ui.send(pilot, "and now")
        assert "CORRECTED-IN-THE-APP-77" not in checkpoint_in(openai_server.requests[-1])
        # Undo the compaction too: its row is marked undone.
        await ui.send(pilot, "/uncompact")
        await ui.until(pilot, lambda: len(panel.records) == 4)
        shown = rows(app)
        assert "undone #4" in shown[0] and "✓" not in shown[0].splitlines()[0], shown


async def test_compact_edit_refuses_a_text_over_the_budget_in_the_editor_and_keeps_it(
    ui: UI,
) -> None:
    app = ui.app()
    async with app.run_test(size=(140, 40)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        await ui.send(pilot, "/compact --edit")
        assert not isinstance(app.screen, SummaryEditorScreen)  # nothing to edit yet
        await ui.send(pilot, "/compact")
        await ui.type(pilot, "/compact --edit")
        await ui.until(pilot, lambda: isinstance(app.screen, SummaryEditorScreen))
        huge = "## Primary request and intent\n" + "- a very long bullet about the port\n" * 4000
        app.screen.query_one(TextArea).load_text(huge)
        await pilot.press("ctrl+s")
        refusal = app.screen.query_one(".refusal", Static)
        await ui.until(pilot, lambda: "Not saved" in str(refusal.render()))
        said = " ".join(str(refusal.render()).split())
        assert "the checkpoint's summary may take" in said, said
        assert isinstance(app.screen, SummaryEditorScreen)  # still open, the text still there
        assert app.screen.query_one(TextArea).text == huge
        kept = said.split("Your text is kept in ")[1].split()[0].rstrip(".")
        assert Path(kept).read_text() == huge
        await pilot.press("escape")
        await ui.until(pilot, lambda: not isinstance(app.screen, SummaryEditorScreen))
        assert [r.kind for r in app.query_one(TimelinePanel).records] == ["compaction"]
