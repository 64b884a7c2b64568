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
