"""Transcript entries: user and steering messages, and notices (replies:
:mod:`tui.widgets.reply`).

Untrusted text (anything a model, a command or a file produced) is cleaned and shown as
:class:`~textual.content.Content`, never parsed as markup.
"""

from __future__ import annotations

from typing import Literal

from textual import events
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from tui.commands.effects import Level
from tui.long_text import drawn
from tui.text import clean

NoticeLevel = Level | Literal["context"]
"""What a notice says (:data:`tui.commands.effects.Level`), or the context a resumed session
shows."""

_ICONS: dict[NoticeLevel, tuple[str, str]] = {
    "info": ("● ", "$text-primary"),
    "warning": ("▲ ", "$text-warning"),
    "error": ("✗ ", "$text-error"),
    "context": ("· ", "$text-muted"),
}


FOLD_LINES = 12
"""A message of this many lines or more (a paste) is shown folded to its first lines."""
FOLDED_HEAD = 3
"""The lines a folded message shows."""


class UserEntry(Static):
    """What the user typed (``steering`` for a message sent while the agent worked); a long
    text is drawn as its head and tail (:mod:`tui.long_text`). A message of
    :data:`FOLD_LINES` lines or more is folded to its first lines and a ``▸ N more lines ·
    show all`` line, which Enter or a click unfolds (and folds again)."""

    queued: reactive[bool] = reactive(False, toggle_class="-queued")
    expanded: reactive[bool] = reactive(False)

    def __init__(self, text: str, *, steering: bool = False, queued: bool = False) -> None:
        super().__init__(classes="-steering" if steering else "")
        self.raw = text
        """What was typed (the text is shown as :attr:`text`)."""
        self.text = clean(drawn(text).joined())
        self.steering = steering
        self.set_reactive(UserEntry.queued, queued)
        self.note = "queued · delivered at the next step"
        self.lines = self.text.rstrip("\n").count("\n") + 1
        self.can_focus = self.folds

    @property
    def folds(self) -> bool:
        return self.lines >= FOLD_LINES

    def shown(self) -> str:
        """The text as drawn now: whole, or folded to its head and the line to unfold it."""
        if not self.folds:
            return self.text
        if self.expanded:
            return f"{self.text}\n▾ show less"
        head = self.text.split("\n", FOLDED_HEAD)[:FOLDED_HEAD]
        more = self.lines - FOLDED_HEAD
        return "\n".join([*head, f"▸ {more} more lines · show all"])

    def on_click(self, event: events.Click) -> None:
        if self.folds:
            event.stop()
            self.expanded = not self.expanded

    def key_enter(self) -> None:
        if self.folds:
            self.expanded = not self.expanded

    def render(self) -> Content:
        label = "steer" if self.steering else "you"
        parts: list[str | tuple[str, str]] = [(f"{label}  ", "bold $text-accent"), self.shown()]
        if self.queued:
            parts.append((f"  ({self.note})", "italic $text-muted"))
        return Content.assemble(*parts)

    def on_mount(self) -> None:
        self.set_class(self.queued, "-queued")

    def deliver(self) -> None:
        self.queued = False

    def wait_for_next_message(self) -> None:
        """The turn ended before the next step: the text goes with the next message."""
        self.note = "queued · sent with your next message"
        self.refresh()


class Notice(Static):
    """A one-paragraph note: a retry, a warning, an error, a command's outcome."""

    def __init__(self, text: str | Content, level: NoticeLevel = "info") -> None:
        super().__init__(classes=f"-{level}")
        icon, style = _ICONS[level]
        body = text if isinstance(text, Content) else Content(clean(text))
        self.level = level
        self.plain = body.plain
        self.update(Content.assemble((icon, style), body))
