"""SVG snapshots of the main screens at fixed sizes (deterministic: a fixed session id and
working directory, no clock on screen, no cursor blink). Update with --snapshot-update."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.session import Session
from tests.tui.conftest import UI
from tui.app import ReeflineApp
from tui.widgets.prompt import PromptArea
from tui.widgets.transcript import Transcript
from tui.wiring import build_registry

SnapCompare = Callable[..., bool]


@pytest.fixture
def snapshot_app(ui: UI) -> ReeflineApp:
    """The demo app on a stored, empty session with a fixed id and directory."""
    Session.create(
        ui.home, cwd="/srv/project", registry=build_registry(), session_id="snapshot-session"
    ).close()
    return ui.app(ui.runtime(resume="snapshot-session"))


async def _still(pilot: Pilot[Any]) -> None:
    pilot.app.query_one(PromptArea).cursor_blink = False
    await pilot.pause()


async def _settled(pilot: Pilot[Any]) -> None:
    """Until the transcript rests at its end and its scrollbar shows so: new content scrolls
    it there, a layout change (the hints opening) moves it again, and the scrollbar follows a
    frame later; a snapshot taken in between differs."""
    transcript = pilot.app.query_one(Transcript)
    rested = 0
    for _ in range(200):
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        bar = transcript.vertical_scrollbar
        at_end = (
            transcript.scroll_y == transcript.max_scroll_y
            and bar.position == transcript.scroll_y  # the thumb is drawn where it is
            and bar.window_virtual_size == transcript.virtual_size.height
        )
        rested = rested + 1 if at_end else 0
        if rested >= 3:
            return
    raise AssertionError("the transcript never came to rest at its end")


def test_idle_80x24(snap_compare: SnapCompare, snapshot_app: ReeflineApp) -> None:
    """The idle screen at the smallest supported size."""
    assert snap_compare(snapshot_app, terminal_size=(80, 24), run_before=_still)


def test_idle_wide_with_timeline(snap_compare: SnapCompare, snapshot_app: ReeflineApp) -> None:
    """A wide terminal opens with the (empty) timeline panel."""
    assert snap_compare(snapshot_app, terminal_size=(140, 36), run_before=_still)


def test_help_and_completion(snap_compare: SnapCompare, snapshot_app: ReeflineApp) -> None:
    """/help output, and the command hints while typing ``/co``."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await _still(pilot)
        app = pilot.app
        assert isinstance(app, ReeflineApp)
        await app.run_slash("help")
        await pilot.press("/", "c", "o")
        await _settled(pilot)

    assert snap_compare(snapshot_app, terminal_size=(100, 30), run_before=run_before)
