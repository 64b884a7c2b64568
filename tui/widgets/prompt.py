"""The prompt: multi-line input with history and slash-command completion as you type.

Enter sends; Shift+Enter, Alt+Enter or Ctrl+J start a new line. Up and Down walk the history
when the cursor is on the first or last line. Typing ``/`` shows the matching commands below
the prompt and a ghost completion that Tab or → accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import Static, TextArea

from tui.history import PromptHistory

NEWLINE_KEYS = frozenset({"shift+enter", "alt+enter", "ctrl+j"})


@dataclass
class PromptSubmitted(Message):
    """The user pressed Enter on a non-empty prompt."""

    text: str


def matching_commands(text: str, commands: Mapping[str, str]) -> list[str]:
    """Command names (without ``/``) that complete ``text`` (``/co`` → compact, context)."""
    if not text.startswith("/") or any(c.isspace() for c in text):
        return []
    prefix = text[1:].lower()
    return [name for name in commands if name.startswith(prefix)]


class PromptArea(TextArea):
    """See the module docstring."""

    def __init__(self, commands: Mapping[str, str], history: PromptHistory, **kwargs: object):
        super().__init__(
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
            **kwargs,  # type: ignore[arg-type]
        )
        self.commands = dict(commands)
        self.prompt_history = history
        self._index: int | None = None
        self._draft = ""

    def update_suggestion(self) -> None:
        text = self.text
        matches = matching_commands(text, self.commands)
        if len(text) > 1 and matches and self.cursor_location == self.document.end:
            self.suggestion = matches[0][len(text) - 1 :] + " "
        else:
            self.suggestion = ""

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
            return
        if key in NEWLINE_KEYS:
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "tab" and self.suggestion:
            event.stop()
            event.prevent_default()
            self.insert(self.suggestion)
            return
        if key == "up" and self.cursor_location[0] == 0 and self._recall(-1):
            event.stop()
            event.prevent_default()
            return
        last_row = self.document.line_count - 1
        if key == "down" and self.cursor_location[0] == last_row and self._recall(+1):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def submit(self) -> None:
        """Send the text (Enter): history, then :class:`PromptSubmitted`; empty text is not
        sent, nor any while the prompt is read-only (a session is being switched)."""
        text = self.text
        if self.read_only or not text.strip():
            return
        self.prompt_history.add(text)
        self._index = None
        self._draft = ""
        self.clear()
        self.post_message(PromptSubmitted(text))

    def _recall(self, step: int) -> bool:
        entries = self.prompt_history.entries
        if not entries:
            return False
        if self._index is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(entries) - 1
        else:
            index = self._index + step
        if index < 0:
            return True  # at the oldest entry: stay
        if index >= len(entries):
            self._index = None
            self.load_text(self._draft)
        else:
            self._index = index
            self.load_text(entries[index])
        self.move_cursor(self.document.end)
        return True


class CommandHints(Static):
    """The commands matching what is typed, under the prompt (hidden otherwise)."""

    def show_for(self, text: str, commands: Mapping[str, str]) -> None:
        matches = matching_commands(text, commands)
        if self.display != bool(matches):
            self.display = bool(matches)
        if not matches:
            return
        parts: list[str | tuple[str, str]] = []
        for i, name in enumerate(matches[:8]):
            if i:
                parts.append(("   ", ""))
            parts.append((f"/{name}", "bold $text-accent" if i == 0 else "$text-accent"))
            parts.append((f" {commands[name]}", "$text-muted"))
        if len(matches) == 1:
            parts.append(("   tab completes", "italic $text-muted"))
        self.update(Content.assemble(*parts))
