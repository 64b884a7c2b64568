"""A theme picked in the command palette is saved in the config file (``theme``) and is the
theme of the next start; the rest of the file is kept as it was."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from textual.app import App
from textual.command import CommandList, CommandPalette

from tests.tui.conftest import UI


def top_hit(app: App[None]) -> str:
    """The highlighted row of the palette on screen ("" while it has none)."""
    hits = app.screen.query(CommandList)
    if not hits or hits.first().highlighted is None:
        return ""
    found = hits.first()
    return str(found.get_option_at_index(found.highlighted or 0).prompt)


async def test_a_theme_picked_in_the_palette_is_there_next_time(ui: UI) -> None:
    config = Path(os.environ["REEFLINE_CONFIG"])
    config.write_text("# my settings\nmax_steps = 12\n\n[compaction]\nthreshold_ratio = 0.7\n")
    app = ui.app()
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.theme != "nord"
        await pilot.press("ctrl+p")
        await ui.until(pilot, lambda: isinstance(app.screen, CommandPalette))
        first = app.screen
        await pilot.press(*"theme")
        await ui.until(pilot, lambda: top_hit(app).startswith("Theme"))
        await pilot.press("enter")  # "Theme": the palette of themes
        await ui.until(
            pilot, lambda: isinstance(app.screen, CommandPalette) and app.screen is not first
        )
        await pilot.press(*"nord")
        await ui.until(pilot, lambda: top_hit(app) == "nord")
        await pilot.press("enter")
        await ui.until(pilot, lambda: app.theme == "nord")
        await ui.until(pilot, lambda: "nord" in config.read_text())
    saved = config.read_text()
    assert saved.startswith('theme = "nord"\n# my settings\nmax_steps = 12\n'), saved
    assert tomllib.loads(saved)["compaction"] == {"threshold_ratio": 0.7}

    again = ui.app()  # a new start reads the settings again
    async with again.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert again.theme == "nord"
