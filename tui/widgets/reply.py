"""An assistant reply in the transcript: the answer as streamed Markdown, the reasoning as one
dim line that expands.

Markdown is rendered by Textual without interpreting console markup; the text is cleaned
first (:func:`tui.text.clean`), like everything a model wrote.
"""

from __future__ import annotations

import asyncio

from textual import events
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownStream

from tui.long_text import StreamedHead, drawn
from tui.text import clean, first_line

FLUSH_S = 1 / 20
"""Streamed text reaches the screen at most this often (seconds)."""


class Reasoning(Static, can_focus=True):
    """The model's reasoning: one dim line, expanded on click or Enter."""

    expanded: reactive[bool] = reactive(False)

    def __init__(self, text: str = "") -> None:
        super().__init__(classes="-collapsed")
        self.text = clean(drawn(text).joined())
        self._head = StreamedHead()

    def append(self, fragment: str) -> None:
        """More streamed reasoning (its head only, see :class:`StreamedHead`)."""
        if piece := self._head.take(clean(fragment)):
            self.text += piece
            self.refresh(layout=True)

    def render(self) -> Content:
        if self.expanded:
            return Content.assemble(("▾ reasoning\n", "bold"), self.text.strip())
        return Content.assemble(("▸ reasoning  ", "bold"), first_line(self.text, 200))

    def watch_expanded(self, expanded: bool) -> None:
        self.set_class(not expanded, "-collapsed")
        self.refresh(layout=True)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.expanded = not self.expanded

    def key_enter(self) -> None:
        self.expanded = not self.expanded


class AssistantEntry(Markdown):
    """One assistant reply: the answer as streamed Markdown, and its reasoning as a
    :class:`Reasoning` line mounted just above it (a sibling, made only when there is
    reasoning: one widget per reply where most have none; a resumed session mounts its
    entries a page at a time, and each widget is laid out again with every page).

    Deltas go through a :class:`MarkdownStream` (it batches when rendering lags); the final
    text from the logged ``assistant/message`` then replaces the streamed one if they differ.
    """

    def __init__(self, text: str = "", reasoning: str | None = None) -> None:
        initial = shown_answer(text)
        super().__init__(initial)
        self.display = bool(initial.strip())
        self._initial = initial
        self._reasoning = reasoning or ""
        self.line = Reasoning(self._reasoning) if self._reasoning.strip() else None
        """The reasoning line above the answer, once there is reasoning."""
        self._stream: MarkdownStream | None = None
        self._pending: list[str] = []
        self._flush_timer: Timer | None = None
        self._head = StreamedHead()
        self._set_line_class()

    def widgets(self) -> list[Widget]:
        """What the transcript mounts for this reply, top first."""
        return [self.line, self] if self.line is not None else [self]

    def _set_line_class(self) -> None:
        # The reasoning line carries the gap above the reply; the answer then sits under it.
        shown = self.line is not None and self.line.display
        self.set_class(shown, "-under-reasoning", update=self.is_mounted)

    @property
    def reasoning(self) -> Reasoning:
        """The reasoning line, mounted above the answer the first time it is asked for."""
        if self.line is None:
            self.line = Reasoning()
            self.line.display = False
            assert isinstance(self.parent, Widget)
            self.parent.mount(self.line, before=self)
        return self.line

    @property
    def _reasoning_text(self) -> str:
        return self.line.text if self.line is not None else ""

    @property
    def text(self) -> str:
        return self.source

    def parts(self) -> tuple[str, str]:
        """(answer, reasoning) as shown, stripped; also before the entry is mounted."""
        if not self.is_mounted:
            return self._initial.strip(), clean(drawn(self._reasoning).joined()).strip()
        return self.source.strip(), self._reasoning_text.strip()

    def add_reasoning(self, fragment: str) -> None:
        self.reasoning.append(fragment)
        self.reasoning.display = bool(self.reasoning.text.strip())
        self._set_line_class()

    async def write(self, fragment: str) -> None:
        """Add streamed text. Fragments are gathered for up to :data:`FLUSH_S` and handed to
        the stream together: each hand-over costs a Markdown parse and a layout pass, and
        the model's stream shares this event loop."""
        fragment = self._head.take(clean(fragment))  # a long reply: its head only, live
        if not fragment:
            return
        self._pending.append(fragment)
        if self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_S, self._flush)

    async def _flush(self) -> None:
        self._flush_timer = None
        if not self._pending:
            return
        text, self._pending = "".join(self._pending), []
        if self._stream is None:
            self._stream = Markdown.get_stream(self)
        self.display = True
        await self._stream.write(text)

    async def _stop_stream(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._pending = []
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stop_stream(stream)

    async def settle(self) -> None:
        """Stop streaming and keep what was shown (nothing was logged for it)."""
        await self._flush()
        await self._stop_stream()

    async def finish(self, text: str, reasoning: str | None) -> None:
        """Settle on the logged reply (the stream may have been partial or absent)."""
        await self._stop_stream()
        text = shown_answer(text)
        if text != self.source:
            await self.update(text)
        self.display = bool(text.strip())
        shown_reasoning = clean(drawn(reasoning).joined()) if reasoning else ""
        if shown_reasoning.strip() and shown_reasoning != self._reasoning_text:
            line = self.reasoning
            line.text = shown_reasoning
            line.refresh(layout=True)
        if self.line is not None:
            self.line.display = bool(self._reasoning_text.strip())
        self._set_line_class()

    async def discard(self) -> None:
        """Forget a partial stream (the request is being retried)."""
        await self._stop_stream()
        if self.line is not None:
            await self.line.remove()
        await self.remove()


def shown_answer(text: str) -> str:
    """The Markdown an answer is drawn as (and copied as, with ctrl+y): cleaned, a long one
    as its head and tail with the note a paragraph between them (:mod:`tui.long_text`)."""
    return clean(drawn(text).joined("\n\n"))


async def stop_stream(stream: MarkdownStream) -> None:
    """Stop ``stream`` and let it write what it still holds. Textual's ``stop`` cancels the
    stream's task and awaits it; a task cancelled before it ever ran (the stream was made
    by the flush timer's callback, and the reply was finished from another task before the
    loop got to it) re-raises that cancel in the caller — the app's message handler, whose
    loop then ends without a word and the screen stops answering. That cancel is not ours:
    it is absorbed, and the text the task never wrote is written here. A cancel of the
    caller itself still propagates."""
    task = asyncio.current_task()
    try:
        await stream.stop()
    except asyncio.CancelledError:
        if task is not None and task.cancelling():
            raise
        # The task never ran: what was handed to the stream is still waiting in it.
        unwritten = "".join(getattr(stream, "_pending", ()))
        if unwritten:
            await stream.markdown_widget.append(unwritten)
