"""An assistant reply in the transcript: the answer as streamed Markdown, the reasoning as one
dim line that expands.

Markdown is rendered by Textual without interpreting console markup; the text is cleaned
first (:func:`tui.text.clean`), like everything a model wrote.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
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


class AssistantEntry(Vertical):
    """One assistant reply: reasoning (collapsed) and the answer as streamed Markdown.

    Deltas go through a :class:`MarkdownStream` (it batches when rendering lags); the final
    text from the logged ``assistant/message`` then replaces the streamed one if they differ.
    """

    def __init__(self, text: str = "", reasoning: str | None = None) -> None:
        super().__init__()
        self._initial = shown_answer(text)
        self._reasoning = reasoning or ""
        self._stream: MarkdownStream | None = None
        self._pending: list[str] = []
        self._flush_timer: Timer | None = None
        self._head = StreamedHead()

    def compose(self) -> ComposeResult:
        # The reasoning line only when there is reasoning (most replies have none): a
        # resumed session mounts its entries a page at a time, and each widget is laid
        # out again with every page.
        if self._reasoning.strip():
            yield Reasoning(self._reasoning)
        markdown = Markdown(self._initial)
        markdown.display = bool(self._initial.strip())
        yield markdown

    @property
    def markdown(self) -> Markdown:
        return self.query_one(Markdown)

    @property
    def reasoning(self) -> Reasoning:
        """The reasoning line, mounted above the answer the first time it is asked for."""
        found = self.query(Reasoning)
        if found:
            return found.first()
        reasoning = Reasoning()
        reasoning.display = False
        self.mount(reasoning, before=0)
        return reasoning

    @property
    def _reasoning_text(self) -> str:
        found = self.query(Reasoning)
        return found.first().text if found else ""

    @property
    def text(self) -> str:
        return self.markdown.source

    def parts(self) -> tuple[str, str]:
        """(answer, reasoning) as shown, stripped; also before the entry is mounted."""
        if not self.is_mounted:
            return self._initial.strip(), clean(drawn(self._reasoning).joined()).strip()
        return self.markdown.source.strip(), self._reasoning_text.strip()

    def add_reasoning(self, fragment: str) -> None:
        self.reasoning.append(fragment)
        self.reasoning.display = bool(self.reasoning.text.strip())

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
            self._stream = Markdown.get_stream(self.markdown)
        self.markdown.display = True
        await self._stream.write(text)

    async def _stop_stream(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._pending = []
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None

    async def settle(self) -> None:
        """Stop streaming and keep what was shown (nothing was logged for it)."""
        await self._flush()
        await self._stop_stream()

    async def finish(self, text: str, reasoning: str | None) -> None:
        """Settle on the logged reply (the stream may have been partial or absent)."""
        await self._stop_stream()
        text = shown_answer(text)
        if text != self.markdown.source:
            await self.markdown.update(text)
        self.markdown.display = bool(text.strip())
        shown_reasoning = clean(drawn(reasoning).joined()) if reasoning else ""
        if shown_reasoning.strip() and shown_reasoning != self._reasoning_text:
            line = self.reasoning
            line.text = shown_reasoning
            line.refresh(layout=True)
        shows_reasoning = bool(self._reasoning_text.strip())
        if self.query(Reasoning):
            self.reasoning.display = shows_reasoning
        self.display = self.markdown.display or shows_reasoning

    async def discard(self) -> None:
        """Forget a partial stream (the request is being retried)."""
        await self._stop_stream()
        await self.remove()


def shown_answer(text: str) -> str:
    """The Markdown an answer is drawn as (and copied as, with ctrl+y): cleaned, a long one
    as its head and tail with the note a paragraph between them (:mod:`tui.long_text`)."""
    return clean(drawn(text).joined("\n\n"))
