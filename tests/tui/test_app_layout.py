"""The main screen at small terminal sizes: the transcript keeps most of a narrow screen when
the timeline is opened, and a very short screen keeps the input row."""

from __future__ import annotations

from tests.tui.conftest import UI
from tui.widgets.prompt import PromptArea
from tui.widgets.timeline import TimelinePanel
from tui.widgets.transcript import Transcript


async def test_the_timeline_opened_at_80_columns_leaves_the_transcript_most_of_it(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(80, 24)) as pilot:
        timeline = app.query_one(TimelinePanel)
        assert not timeline.display  # opens collapsed on a narrow screen
        await pilot.press("ctrl+t")
        await ui.until(pilot, lambda: timeline.display and timeline.region.width > 0)
        await pilot.pause()
        transcript = app.query_one(Transcript)
        assert timeline.region.width <= 26, timeline.region
        assert transcript.region.width >= 54, transcript.region


async def test_a_six_row_screen_keeps_the_input_row(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(20, 6)) as pilot:
        await pilot.pause()
        prompt = app.query_one(PromptArea)
        await ui.type(pilot, "hi", enter=False, keys=True)
        await pilot.pause()
        region = prompt.content_region
        assert region.height >= 1 and region.y >= 0 and region.bottom <= 6, region
        # Everything fits: the screen is not scrolled to show the prompt at the cost of the rest.
        assert app.screen.virtual_size.height <= 6, app.screen.virtual_size
        assert all(w.region.y >= 0 for w in app.screen.children if w.display), [
            (w, w.region) for w in app.screen.children
        ]
        assert prompt.text == "hi"


async def test_shrinking_to_60_columns_hides_the_panel_unless_asked_for_there(ui: UI) -> None:
    """The panel shown on a wide terminal (by default, or by ctrl+t there) is hidden when
    the terminal shrinks to 60×20, whatever was chosen wide; ctrl+t there shows it, and that
    choice holds while the terminal stays narrow."""
    app = ui.app()
    async with app.run_test(size=(200, 60)) as pilot:
        timeline = app.query_one(TimelinePanel)
        transcript = app.query_one(Transcript)
        assert timeline.display
        await pilot.press("ctrl+t")  # hidden, then shown again: the person chose it, wide
        await pilot.press("ctrl+t")
        assert timeline.display
        await pilot.resize_terminal(60, 20)
        await ui.until(pilot, lambda: app.size.width == 60)
        await pilot.pause()
        assert not timeline.display
        assert transcript.region.width >= 58, transcript.region
        await pilot.press("ctrl+t")  # asked for at 60 columns: shown, and kept at 70
        await ui.until(pilot, lambda: timeline.display and timeline.region.width > 0)
        await pilot.resize_terminal(70, 20)
        await ui.until(pilot, lambda: app.size.width == 70)
        assert timeline.display
        await pilot.resize_terminal(130, 30)  # wide again: the wide choice (shown) holds
        await ui.until(pilot, lambda: app.size.width == 130)
        assert timeline.display
        await pilot.resize_terminal(60, 20)  # and narrow again: hidden, the narrow ask forgotten
        await ui.until(pilot, lambda: app.size.width == 60)
        assert not timeline.display


async def test_the_panel_open_by_default_goes_when_the_terminal_shrinks(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(130, 30)) as pilot:
        timeline = app.query_one(TimelinePanel)
        assert timeline.display
        await pilot.resize_terminal(60, 20)
        await ui.until(pilot, lambda: app.size.width == 60)
        await pilot.pause()
        assert not timeline.display
