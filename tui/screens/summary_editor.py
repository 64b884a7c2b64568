"""The summary editor: the newest checkpoint's summary in a text area. Ctrl+S saves it
(through the callback it was given, which appends the ``compact/edit`` or says why not);
a refusal is shown here and the text stays in the editor, kept in the draft file the
refusal names. Esc closes without saving (a changed text is kept in a draft file first)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from compact.commands.summary_edit import EditOutcome
from tui.text import clean

Save = Callable[[str], EditOutcome]
"""Saves the text; what it did, or why not."""
Keep = Callable[[str], Path | None]
"""Keeps a text not saved in a draft file; its path."""


class SummaryEditorScreen(ModalScreen[str | None]):
    """See the module docstring. Dismissed with the outcome's text once saved, None when
    closed without saving."""

    AUTO_FOCUS = "TextArea"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "save", priority=True),
        Binding("escape", "close", "close"),
    ]

    def __init__(self, summary: str, number: int, save: Save, keep: Keep) -> None:
        super().__init__(classes="modal")
        self.summary = summary
        self.number = number
        self._save = save
        self._keep = keep

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -editor") as dialog:
            dialog.border_title = f"Edit the summary of compaction #{self.number}"
            dialog.border_subtitle = "ctrl+s saves · esc closes"
            yield Static(
                "The model reads this text in place of the checkpoint's summary from the next "
                "request on; /uncompact takes the edit back.",
                classes="hint",
            )
            yield TextArea(self.summary, language="markdown", soft_wrap=True, id="summary-text")
            yield Static("", classes="refusal")

    @property
    def text(self) -> str:
        return self.query_one(TextArea).text

    def action_save(self) -> None:
        outcome = self._save(self.text)
        if outcome.ok:
            self.dismiss(outcome.text)
            return
        self.query_one(".refusal", Static).update(
            Content.styled(clean(outcome.text), "$text-error")
        )

    def action_close(self) -> None:
        text = self.text
        if text.strip() != self.summary.strip() and text.strip():
            draft = self._keep(text)
            if draft is not None:
                self.app.notify(f"Not saved; your text is kept in {draft}.", severity="warning")
        self.dismiss(None)
