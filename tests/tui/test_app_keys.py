"""The keyboard in daily use: reaching a timeline row, coming back to the prompt, scrolling
the transcript from the prompt, and toasts that leave the prompt visible."""

from __future__ import annotations

from textual.command import CommandList, CommandPalette
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets._toast import Toast

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.tui.conftest import UI
from tui.screens.context import ContextScreen
from tui.screens.summary import SummaryScreen
from tui.widgets.prompt import PromptArea
from tui.widgets.timeline import TimelinePanel
from tui.widgets.transcript import Transcript


async def test_shift_tab_reaches_a_row_and_closing_the_summary_gives_keys_back(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(140, 44)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        await ui.send(pilot, "/compact")
        assert app.main.view.timeline.records
        prompt = app.query_one(PromptArea)
        prompt.focus()
        await pilot.press("shift+tab")
        assert app.focused is app.query_one(TimelinePanel).query_one(OptionList)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, SummaryScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.focused is prompt
        await pilot.press("h", "i")
        assert prompt.text == "hi"  # what is typed next lands in the prompt


async def test_page_keys_scroll_the_transcript_from_the_prompt(ui: UI) -> None:
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    for n in range(40):
        session.append("user/message", {"content": f"message {n}"})
    session.close()
    app = ui.app(ui.runtime(resume=session.id))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        transcript = app.query_one(Transcript)
        app.query_one(PromptArea).focus()
        bottom = transcript.scroll_y
        assert bottom == transcript.max_scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert transcript.scroll_y < bottom
        await pilot.press("pagedown")
        await pilot.pause()
        assert transcript.scroll_y == bottom
        assert isinstance(app.focused, PromptArea)


async def test_a_toast_does_not_cover_the_prompt(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify("Copied the last answer to the clipboard.")
        # Until it is laid out (mounted first, placed at the next layout pass).
        await ui.until(
            pilot, lambda: bool(app.screen.query(Toast) and app.screen.query_one(Toast).region)
        )
        toast = app.screen.query_one(Toast)
        prompt = app.query_one(PromptArea)
        assert toast.region.height > 0
        assert not toast.region.overlaps(prompt.region), (toast.region, prompt.region)


async def test_a_running_command_shows_its_output_and_esc_keeps_it(ui: UI, openai_server) -> None:  # type: ignore[no-untyped-def]
    """The card fills while the command runs; Esc kills it and the card keeps what it had."""
    from tui.widgets.tool_card import ToolCard

    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo live one; sleep 100"}}]}
    )
    runtime = ui.runtime(base_url=openai_server.base_url, model="m", demo=False)
    app = ui.app(runtime)
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.type(pilot, "run it")
        await ui.until(pilot, lambda: bool(app.query(ToolCard)))
        card = app.query_one(ToolCard)
        await ui.until(pilot, lambda: "live one" in card.output)
        assert card.running and "running" in str(card.border_subtitle)
        await pilot.press("escape")
        await ui.settle(pilot)
        assert not card.running and "live one" in card.output
        assert "interrupted by the user" in card.output
        assert Content.from_markup(card.border_subtitle).plain.startswith("interrupted"), (
            card.border_subtitle
        )
        assert "error" not in Content.from_markup(card.border_subtitle).plain


def _long_session(ui: UI) -> str:
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    for n in range(40):
        session.append("user/message", {"content": f"message {n}"})
    session.close()
    return session.id


async def _at_bottom(ui: UI, pilot, transcript: Transcript) -> None:  # type: ignore[no-untyped-def]
    await ui.until(pilot, lambda: transcript.max_scroll_y > 0)
    await ui.until(pilot, lambda: transcript.scroll_y == transcript.max_scroll_y)


async def test_scrolled_back_to_the_bottom_the_output_is_followed_again(ui: UI) -> None:
    """PageUp, then PageDown back to the bottom (and once more there, as people do): later
    output stays in view."""
    app = ui.app(ui.runtime(resume=_long_session(ui)))
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        await _at_bottom(ui, pilot, transcript)
        await pilot.press("pageup")
        await ui.until(pilot, lambda: transcript.scroll_y < transcript.max_scroll_y)
        await pilot.press("pagedown")
        await ui.until(pilot, lambda: transcript.scroll_y == transcript.max_scroll_y)
        await pilot.press("pagedown")
        await pilot.pause()
        before = transcript.max_scroll_y
        # Output no prompt brought (a prompt re-pins the view): /help from the palette.
        await pilot.press("ctrl+p")
        await ui.until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"/help")
        await ui.until(pilot, lambda: app.screen.query_one(CommandList).option_count > 0)
        await pilot.press("enter")
        await ui.until(pilot, lambda: transcript.max_scroll_y > before)
        await _at_bottom(ui, pilot, transcript)


async def test_sending_a_prompt_brings_the_view_back_to_the_bottom(ui: UI) -> None:
    app = ui.app(ui.runtime(resume=_long_session(ui)))
    async with app.run_test(size=(100, 30)) as pilot:
        transcript = app.query_one(Transcript)
        await _at_bottom(ui, pilot, transcript)
        await pilot.press("pageup", "pageup")
        await ui.until(pilot, lambda: transcript.scroll_y < transcript.max_scroll_y)
        await ui.send(pilot, "explore the README.md")
        await _at_bottom(ui, pilot, transcript)


async def test_typing_with_the_timeline_focused_lands_in_the_prompt(ui: UI) -> None:
    """Shift+Tab into the timeline, then type a slash command and Enter: it runs (it was
    lost, and its Enter opened the row). Esc from a row brings the focus back too."""
    app = ui.app()
    async with app.run_test(size=(140, 44)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        await ui.send(pilot, "/compact")
        prompt = app.query_one(PromptArea)
        rows = app.query_one(TimelinePanel).query_one(OptionList)
        await pilot.press("shift+tab")
        assert app.focused is rows
        await pilot.press(*"/context", "enter")
        await ui.until(pilot, lambda: isinstance(app.screen, ContextScreen))
        await pilot.press("escape")
        await ui.until(pilot, lambda: app.screen is app.screen_stack[0])
        assert app.focused is prompt and prompt.text == ""
        await pilot.press("shift+tab")
        assert app.focused is rows
        await pilot.press("escape")
        assert app.focused is prompt


async def test_tab_reaches_a_long_card_and_enter_shows_it_all(
    ui: UI,
    openai_server,  # type: ignore[no-untyped-def]
) -> None:
    """The keyboard way to expand a card: Tab from the prompt focuses its output, Enter
    shows all; a key typed there goes on in the prompt."""
    from tui.widgets.tool_card import CardOutput, ToolCard

    openai_server.push(
        {"tool_calls": [{"name": "bash", "arguments": {"command": "seq 1 30"}}]},
        {"text": "Thirty lines."},
    )
    app = ui.app(ui.runtime(base_url=openai_server.base_url, model="m", demo=False))
    async with app.run_test(size=(120, 40)) as pilot:
        await ui.send(pilot, "count")
        card = app.query_one(ToolCard)
        assert not card.expanded
        await pilot.press("tab")
        assert app.focused is card.query_one(CardOutput)
        await pilot.press("enter")
        assert card.expanded
        await pilot.press("h", "i")
        assert app.focused is app.query_one(PromptArea)
        assert app.query_one(PromptArea).text == "hi"
        assert card.expanded


async def test_tab_from_the_prompt_goes_to_the_newest_card_not_the_first(
    ui: UI,
    openai_server,  # type: ignore[no-untyped-def]
) -> None:
    """Two long cards: Tab from the prompt focuses the newest one's output (and the view
    stays at the bottom), not the first card of the session."""
    from tui.widgets.tool_card import CardOutput, ToolCard

    for n in (1, 2):
        openai_server.push(
            {"tool_calls": [{"name": "bash", "arguments": {"command": f"seq {n} 40"}}]},
            {"text": f"Answer {n}."},
        )
    app = ui.app(ui.runtime(base_url=openai_server.base_url, model="m", demo=False))
    async with app.run_test(size=(120, 30)) as pilot:
        await ui.send(pilot, "count")
        await ui.send(pilot, "again")
        first, second = app.query(ToolCard)
        await pilot.press("tab")
        assert app.focused is second.query_one(CardOutput)
        await pilot.press("shift+tab")  # and on to the older one from there
        assert app.focused is first.query_one(CardOutput)


class Clock:
    """The timeline panel's time, moved by the test (nothing here waits on real time)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_u_typed_on_a_row_as_the_first_letter_of_a_message_undoes_nothing(
    ui: UI,
) -> None:
    """``use grep`` typed with a timeline row focused lands whole in the prompt, and the
    compaction stays; a ``u`` with nothing typed after it for the quiet moment undoes, and
    Enter right after ``u`` confirms it at once."""
    app = ui.app()
    async with app.run_test(size=(140, 44)) as pilot:
        await ui.send(pilot, "explore the README.md")
        await ui.send(pilot, "now parser.py")
        await ui.send(pilot, "/compact")
        panel = app.query_one(TimelinePanel)
        clock = panel.clock = Clock()
        rows = panel.query_one(OptionList)
        prompt = app.query_one(PromptArea)
        rows.focus()
        await pilot.press(*"use grep")
        assert prompt.text == "use grep" and app.focused is prompt
        clock.now += 5  # long after: the u was typing, nothing is left to undo
        await pilot.pause(0.1)
        await ui.settle(pilot)
        assert [r.kind for r in panel.records] == ["compaction"]
        prompt.clear()
        rows.focus()
        await pilot.press("u")
        await pilot.pause(0.1)
        assert [r.kind for r in panel.records] == ["compaction"]  # not yet: it may be typing
        clock.now += 1
        await ui.until(pilot, lambda: any(r.kind == "undo" for r in panel.records))
        await ui.settle(pilot)
        assert prompt.text == ""
        await ui.send(pilot, "/compact")
        rows.focus()
        rows.highlighted = len(panel.records) - 1
        await pilot.press("u", "enter")  # Enter confirms at once
        await ui.until(pilot, lambda: sum(r.kind == "undo" for r in panel.records) == 2)
        assert prompt.text == "" and not isinstance(app.screen, SummaryScreen)
