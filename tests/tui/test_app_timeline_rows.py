"""The timeline panel's rows and the compaction marker, read as a person reads them: columns
that stay put past ``#9``, a space between the status icon and the time, and a marker cut with
an ellipsis (its ``view`` kept) when the panel narrows the transcript."""

from __future__ import annotations

import re

from textual.widgets import OptionList

from tests.tui.conftest import UI
from tui.widgets.marker import CompactionMarker
from tui.widgets.timeline import TimelinePanel


async def test_rows_keep_their_columns_past_nine_and_space_the_time(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(200, 60)) as pilot:
        panel = app.query_one(TimelinePanel)
        await ui.send(pilot, "how many lines has each file?")
        await ui.send(pilot, "give me an overview")
        for n in range(5):  # ten rows: five compactions, each undone
            await ui.send(pilot, "/compact")
            await ui.send(pilot, "/uncompact")
            await ui.until(pilot, lambda n=n: len(panel.records) == 2 * n + 2)
        await ui.until(pilot, lambda: all(r.status == "done" for r in panel.records))
        options = panel.query_one(OptionList)
        heads = [str(options.get_option_at_index(i).prompt).split("\n") for i in range(10)]
        first, tenth = heads[0], heads[9]
        assert first[0].startswith("#1  manual"), first
        assert tenth[0].startswith("#10 undo"), tenth
        # Each compaction was undone (its row says so, friction 7); each undo is done.
        undone, undos = heads[0::2], heads[1::2]
        assert undos[0][0].index("✓") == tenth[0].index("✓")  # #2 and #10: one column
        assert all(re.search(r"✓\s\d\d:\d\d$", head[0]) for head in undos), undos
        assert all(re.search(r"↶\sundone #\d+$", head[0]) for head in undone), undone
        # The detail lines start under the label, on every row.
        assert all(len(h[1]) - len(h[1].lstrip("\u00a0")) == 4 for h in heads), heads


async def test_a_marker_too_long_for_the_transcript_ends_in_an_ellipsis(ui: UI) -> None:
    app = ui.app()
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.query_one(TimelinePanel).display  # the panel narrows the transcript
        await ui.send(pilot, "how many lines has each file?")
        await ui.send(pilot, "give me an overview")
        await ui.send(pilot, "/compact keep every line count of every file in the project")
        await ui.until(pilot, lambda: bool(app.query(CompactionMarker)))
        marker = app.query_one(CompactionMarker)
        await ui.until(pilot, lambda: marker.record is not None)
        await pilot.pause()
        label = marker.label()
        drawn = marker.render().plain.rstrip("─")
        assert len(label) + 12 > marker.size.width, (label, marker.size)  # too long here
        assert drawn.endswith("… · view "), drawn
        assert len(drawn) <= marker.size.width
        await pilot.resize_terminal(240, 40)  # room enough: the whole label again
        await ui.until(pilot, lambda: marker.size.width > len(label) + 12)
        assert marker.render().plain.rstrip("─").endswith(f" {label} · view ")
