"""The ``/sessions`` modal: pick a stored session to resume."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from agent.log.store import StoredSession, first_prompt
from tui.text import first_line


def session_row(stored: StoredSession, current: str) -> Content:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(stored.modified))
    size = f"{stored.size / 1024:.0f} KB" if stored.size >= 1024 else f"{stored.size} B"
    mark = ("  (this session)", "$text-accent") if stored.id == current else ("", "")
    first = first_line(first_prompt(stored.path).listed, 60)
    return Content.assemble(
        (stored.id, "bold"), (f"  {when} · {size}", "$text-muted"), mark, (f"  {first}", "")
    )


class SessionsScreen(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None."""

    AUTO_FOCUS = "OptionList"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, sessions: Sequence[StoredSession], current: str) -> None:
        super().__init__(classes="modal")
        self.sessions = list(sessions)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -sessions") as dialog:
            dialog.border_title = "Sessions"
            dialog.border_subtitle = "enter resumes · esc closes"
            yield OptionList(
                *(Option(session_row(s, self.current), id=s.id) for s in self.sessions)
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    async def action_dismiss(self, result: str | None = None) -> None:
        self.dismiss(result)
