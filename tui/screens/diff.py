"""The diff of one command: per file, added lines green, removed red, the code in them
coloured by its language (:mod:`tui.diff_style`). The patch can be long (one command can
write a 150,000-line file): the first :data:`LINES_PER_FILE` lines of each file are styled in
a worker thread before they are shown, and the rest of a file is there when asked for (a
click on the row that says how much more there is, or ``a`` for every file), each row styled
in a thread as it comes into view (:class:`~tui.widgets.diff_view.DiffView`), while the
screen goes on answering keys."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen

from tui.diff_style import first_parts
from tui.widgets.diff_view import DiffView

LINES_PER_FILE = 2_000
"""Lines of a file shown at first (about a quarter of a second to style)."""
LINES_AT_FIRST = 10_000
"""Lines of the whole patch shown at first: past them, each further file shows only its
first line, which names it (the rest is a click away)."""


class DiffScreen(ModalScreen[None]):
    """Shows ``patch`` under ``title``; Esc or q closes it, ``a`` shows every file whole."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "dismiss", "close"),
        Binding("a", "show_all", "show all"),
    ]

    def __init__(self, title: str, patch: str) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.patch = patch
        self.diff_view = DiffView(id="diff-text")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -diff") as dialog:
            dialog.border_title = Content(self.title_text)
            dialog.border_subtitle = "esc closes"
            yield self.diff_view

    def on_mount(self) -> None:
        self.diff_view.focus()
        self._style_first()

    @work(group="diff-style")
    async def _style_first(self) -> None:
        parts = await asyncio.to_thread(first_parts, self.patch, LINES_PER_FILE, LINES_AT_FIRST)
        self.diff_view.show(parts)
        self._say_keys()

    def _show_rest(self, numbers: list[int]) -> None:
        """Show every line of the parts ``numbers`` (styled as they come into view)."""
        for n in numbers:
            self.diff_view.parts[n].shown = len(self.diff_view.parts[n].lines)
        self.diff_view.show(self.diff_view.parts)
        self._say_keys()

    def _say_keys(self) -> None:
        more = " · a shows all" if self.diff_view.hidden else ""
        self.query_one(".dialog", Vertical).border_subtitle = f"esc closes{more}"

    def action_show_all(self) -> None:
        self._show_rest(list(range(len(self.diff_view.parts))))

    def on_diff_view_more_requested(self, message: DiffView.MoreRequested) -> None:
        self._show_rest([message.part])

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
