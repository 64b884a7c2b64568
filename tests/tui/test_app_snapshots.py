"""SVG snapshots of the main screens at fixed sizes (deterministic: a fixed session id and
working directory, no clock on screen, no cursor blink). Update with --snapshot-update."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.tui.conftest import UI
from tui.app.app import ReeflineApp
from tui.widgets.prompt import PromptArea
from tui.widgets.transcript import Transcript

SnapCompare = Callable[..., bool]


@pytest.fixture
def snapshot_app(ui: UI) -> ReeflineApp:
    """The demo app on a stored, empty session with a fixed id and directory."""
    Session.create(
        ui.home, cwd="/srv/project", registry=build_registry(), session_id="snapshot-session"
    ).close()
    # The sandbox is named, not detected: the status line must not depend on the machine.
    return ui.app(ui.runtime(resume="snapshot-session", sandbox="off"))


async def _still(pilot: Pilot[Any]) -> None:
    pilot.app.query_one(PromptArea).cursor_blink = False
    await pilot.pause()


async def _fits(pilot: Pilot[Any]) -> None:
    """Until the transcript is laid out and holds all of its content: with nothing to
    scroll there is no scrollbar, whose thumb a snapshot can catch a frame late."""
    transcript = pilot.app.query_one(Transcript)
    for _ in range(200):
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        if transcript.virtual_size.height and transcript.max_scroll_y == 0:
            return
    raise AssertionError(f"the transcript overflows ({transcript.max_scroll_y} rows)")


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
        await _fits(pilot)

    # Tall enough for every command's line in /help, and a few more commands.
    assert snap_compare(snapshot_app, terminal_size=(100, 54), run_before=run_before)
