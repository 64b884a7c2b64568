"""The ``/rewind`` modal: the earlier prompts of this session, newest first; picking one goes
back to just before it (a new session forked from the log; this one is kept)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from agent.log.events import FilesRestore
from agent.log.fork import ForkPoint
from tui.text import first_line


class RewindScreen(ModalScreen[ForkPoint | FilesRestore | None]):
    """Dismisses with the chosen point (or file restore to undo), or None."""

    AUTO_FOCUS = "OptionList"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, points: Sequence[ForkPoint], undo: Sequence[FilesRestore] = ()) -> None:
        super().__init__(classes="modal")
        self.points: list[ForkPoint | FilesRestore] = [*reversed(undo), *reversed(points)]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -sessions") as dialog:
            dialog.border_title = "Go back to before…"
            dialog.border_subtitle = "enter goes back (a new session; this one is kept) · esc"
            yield OptionList(*(Option(_label(p), id=str(i)) for i, p in enumerate(self.points)))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.points[int(event.option.id or 0)])

    async def action_dismiss(self, result: ForkPoint | FilesRestore | None = None) -> None:
        self.dismiss(result)


def _label(point: ForkPoint | FilesRestore) -> Content:
    if isinstance(point, FilesRestore):
        n = len(point.data.restored)
        return Content.assemble(
            ("undo      ", "$text-warning"), f"the file restore at seq {point.seq} ({n} files)"
        )
    return Content.assemble(
        (f"turn {point.turn:>3}  ", "$text-muted"), first_line(point.prompt, 90)
    )
