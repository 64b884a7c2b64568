"""The diff of one command: per file, added lines green, removed red. The patch is the
workspace's own text, untrusted: cleaned by the one terminal sanitizer and shown as plain
:class:`~textual.content.Content`, never parsed as markup."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.text import clean

STYLES = (("+++", "$text-muted"), ("---", "$text-muted"), ("+", "$text-success"))
STYLES += (("-", "$text-error"), ("@@", "$text-accent"), ("diff --git", "bold"))


def diff_content(patch: str) -> Content:
    """``patch`` cleaned, each line styled by its first characters."""
    lines = []
    for line in clean(patch).rstrip("\n").split("\n"):
        style = next((s for head, s in STYLES if line.startswith(head)), "")
        lines.append(Content.styled(line, style) if style else Content(line))
    return Content("\n").join(lines)


class DiffScreen(ModalScreen[None]):
    """Shows ``patch`` under ``title``; Esc or q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, title: str, patch: str) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.patch = patch

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -diff") as dialog:
            dialog.border_title = Content(self.title_text)
            dialog.border_subtitle = "esc closes"
            with VerticalScroll():
                yield Static(diff_content(self.patch), id="diff-text")

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
