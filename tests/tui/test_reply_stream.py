"""Stopping a reply's Markdown stream never ends the app's message loop.

Textual's ``MarkdownStream.stop`` cancels the stream's task and awaits it; a task cancelled
before it first ran re-raises that cancel in the caller. In the app the caller is a message
handler (the logged reply arrives while the flush timer's callback has just made the
stream), and a cancel escaping a handler ends Textual's message loop silently: the screen
stops answering. Real widgets, a real app, the real race, made to happen every time."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App, ComposeResult
from textual.widgets import Markdown

from tui.widgets.reply import stop_stream


class Page(App[None]):
    def compose(self) -> ComposeResult:
        yield Markdown()


async def test_a_stream_stopped_before_its_task_ran_is_absorbed_and_loses_nothing() -> None:
    async with Page().run_test() as pilot:
        markdown = pilot.app.query_one(Markdown)
        stream = Markdown.get_stream(markdown)  # its task is made, not yet run
        stream._pending.append("the head of the answer")  # handed over, not yet written
        # Textual's own stop raises the task's cancel here: the race the app met.
        await stop_stream(stream)
        assert markdown.source == "the head of the answer"
        await pilot.pause()
        assert pilot.app.is_running


async def test_textual_still_raises_there_so_the_guard_is_needed() -> None:
    async with Page().run_test() as pilot:
        stream = Markdown.get_stream(pilot.app.query_one(Markdown))
        with pytest.raises(asyncio.CancelledError):
            await stream.stop()
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_cancel_of_the_caller_itself_still_propagates() -> None:
    async with Page().run_test() as pilot:
        markdown = pilot.app.query_one(Markdown)
        stopped = False

        async def stopping() -> None:
            nonlocal stopped
            stream = Markdown.get_stream(markdown)
            current = asyncio.current_task()
            assert current is not None
            current.cancel()  # the caller is being cancelled (Esc on a turn, say)
            await stop_stream(stream)
            stopped = True

        task = asyncio.create_task(stopping())
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not stopped
