"""The app and the garbage collector (:mod:`tui.heap`): what is frozen out of its passes and
when, and the pages scrolled past collected one at a time."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from textual.pilot import Pilot

from agent.log.session import Session
from compact.contract.registry import build_registry
from tests.tui.conftest import UI
from tui import heap
from tui.app.app import ReeflineApp
from tui.widgets.entries import UserEntry
from tui.widgets.transcript import MOUNTED_PAGES, PAGE, REPLAY_WINDOW, ShowEarlier

Ref = weakref.ReferenceType[Any]


async def test_a_session_on_screen_is_frozen_and_let_go_when_another_replaces_it(
    ui: UI,
) -> None:
    """What the first session loaded, then its first screen, are left out of the
    collector's passes; /new lifts the freeze, and the old session's widgets are freed
    (they form reference cycles: left frozen, they could never be)."""
    app = ui.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.send(pilot, "first session")
        assert gc.get_freeze_count() > 0
        old_widget = weakref.ref(app.query(UserEntry).first())
        await ui.send(pilot, "/new")
        await ui.until(pilot, lambda: not app.query(UserEntry))
        # Removal ends over a few messages, and the layout lets go of the old widgets at
        # its next frame: waited for, however slow the machine (kept for ever, they fail).
        await ui.until(pilot, lambda: gc.get_freeze_count() == 0)
        await ui.until(pilot, lambda: _collected(old_widget))


async def test_the_collector_is_off_until_the_first_session_is_loaded_and_frozen(
    ui: UI, collector_on: None
) -> None:
    """As ``reefline`` opens a session for the app, the collector is deferred: no young pass
    scans what the log's load makes. Once the session is shown, its events are frozen
    (in none of the collector's generations) and the collector is on again."""
    app = ui.app()
    async with app.run_test(size=(100, 30)) as pilot:
        await ui.send(pilot, "a session to resume")
    app.runtime.close()
    sid = app.runtime.session.id
    gc.collect()
    before = [g["collections"] for g in gc.get_stats()]
    heap.defer_collection()
    try:
        runtime = ui.runtime(resume=sid)
        assert not gc.isenabled()
        assert [g["collections"] for g in gc.get_stats()] == before
        resumed = ui.app(runtime)
        async with resumed.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert gc.isenabled() and gc.get_freeze_count() > 0
            tracked = {id(o) for o in gc.get_objects()}
            loaded = [e for e in runtime.session.events if gc.is_tracked(e)]
            assert loaded and not any(id(e) in tracked for e in loaded)
    finally:
        heap.resume_collection()
    assert gc.isenabled()


def test_a_deferred_collector_comes_back_once_and_only_if_reefline_turned_it_off(
    collector_on: None,
) -> None:
    heap.defer_collection()
    assert not gc.isenabled()
    heap.resume_collection()
    heap.resume_collection()
    assert gc.isenabled()
    gc.disable()  # someone else's pause: not ours to end
    try:
        heap.defer_collection()
        heap.keep_loaded()
        heap.release_loaded()
        heap.resume_collection()
        assert not gc.isenabled()
    finally:
        gc.enable()


def _long_session(ui: UI, pages: int) -> str:
    session = Session.create(ui.home, cwd=str(ui.workdir), registry=build_registry())
    for n in range(REPLAY_WINDOW + PAGE * pages):
        session.append("user/message", {"content": f"message {n}"})
    session.close()
    return session.id


def _frozen(widget: object) -> bool:
    return gc.is_tracked(widget) and all(o is not widget for o in gc.get_objects())


def _collected(ref: Ref) -> bool:
    """Whether a full collection now frees what ``ref`` refers to (or it is gone already)."""
    gc.collect()
    return ref() is None


async def test_the_first_screen_is_frozen_once_the_app_settles(ui: UI) -> None:
    """The newest entries live as long as the session: once the first screen is up they
    leave the collector's passes too, and a page "show earlier" mounts later does not.
    (When the freeze comes, :data:`heap.SETTLE_S` after the screen, is waited for: on a
    loaded machine that moment can pass before the test first looks.)"""
    app = ui.app(ui.runtime(resume=_long_session(ui, 3)))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        newest = app.query(UserEntry).last()
        await ui.until(pilot, lambda: _frozen(newest))
        await app.query_one(ShowEarlier).key_enter()
        await pilot.pause()
        assert not _frozen(app.query(UserEntry).first())  # the page just mounted


async def test_the_first_page_freezes_the_first_screen_if_it_comes_sooner(ui: UI) -> None:
    app = ui.app(ui.runtime(resume=_long_session(ui, 3)))
    async with app.run_test(size=(100, 30)) as pilot:
        newest = app.query(UserEntry).last()
        await app.query_one(ShowEarlier).key_enter()  # before the app settles
        await pilot.pause()
        assert _frozen(newest)
        assert not _frozen(app.query(UserEntry).first())


@pytest.fixture
def collector_off(collector_on: None) -> Iterator[None]:
    """No automatic pass at all: what is freed is freed by the app's own collections."""
    gc.disable()
    yield
    gc.enable()


async def _scroll_first_page_past(app: ReeflineApp, pilot: Pilot[None], *, pause: bool) -> Ref:
    """Mount a first page of history, then as many more as to unmount it (with a ``pause``
    after each, or back to back), then let a frame be drawn (the layout lets go of what was
    unmounted). Returns a reference to one of its widgets, checked to be scrolled past:
    unmounted, or already freed (a frame can take longer than :data:`heap.TIDY_S` on a
    loaded machine, and then the pause has collected the page; a mounted widget is never
    freed, its parent holds it)."""
    await app.query_one(ShowEarlier).key_enter()
    await pilot.pause()
    first_page = weakref.ref(app.query(UserEntry).first())
    for _ in range(MOUNTED_PAGES):
        await app.query_one(ShowEarlier).key_enter()
        if pause:
            await pilot.pause()
    await pilot.pause()
    widget = first_page()
    assert widget is None or not widget.is_attached  # scrolled past
    del widget  # the test must not be what keeps it
    return first_page


async def test_a_page_scrolled_past_is_collected_once_paging_pauses(
    ui: UI, collector_off: None
) -> None:
    """An unmounted page is garbage in reference cycles; with no automatic pass at all
    (the collector off), the pause after paging still frees it (waited for: nothing else
    collects here, so a page the pause does not free stays, and the wait fails)."""
    app = ui.app(ui.runtime(resume=_long_session(ui, MOUNTED_PAGES + 3)))
    async with app.run_test(size=(100, 30)) as pilot:
        first_page = await _scroll_first_page_past(app, pilot, pause=True)
        await ui.until(pilot, lambda: first_page() is None)


async def test_a_held_key_collects_each_page_scrolled_past_at_the_next_page(
    ui: UI, collector_off: None
) -> None:
    """Pages asked for back to back: the page scrolled past is collected at the start of
    the next one at the latest (a page's garbage at a time), not left to pile up into a
    full pass. Whatever the machine's speed: if the frame before the next page took longer
    than :data:`heap.TIDY_S`, the pause has freed it already, which the claim allows."""
    app = ui.app(ui.runtime(resume=_long_session(ui, MOUNTED_PAGES + 3)))
    async with app.run_test(size=(100, 30)) as pilot:
        first_page = await _scroll_first_page_past(app, pilot, pause=False)
        await app.query_one(ShowEarlier).key_enter()  # at once: no pause to tidy in
        assert first_page() is None
