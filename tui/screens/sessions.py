"""The ``/sessions`` modal: pick a stored session to resume."""

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

from agent.log.catalogue import Listed
from tui.view.session_list import ago, folder_of, last_asked, size


def session_row(listed: Listed, current: str, width: int = 70) -> Content:
    """Two lines: the name (else the id), age, size, folder; then the last prompt."""
    title = listed.name or listed.id
    mark = ("  (this session)", "$text-accent") if listed.id == current else ("", "")
    facts = f"  {ago(listed.stored.modified)} · {size(listed)} · {folder_of(listed)}"
    named = (f"  {listed.id}", "$text-muted") if listed.name else ("", "")
    return Content.assemble(
        (title, "bold"),
        (facts, "$text-muted"),
        named,
        mark,
        "\n  ",
        (last_asked(listed, width), ""),
    )


class SessionsScreen(ModalScreen[str | None]):
    """Dismisses with the chosen session id, or None."""

    AUTO_FOCUS = "OptionList"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, sessions: Sequence[Listed], current: str) -> None:
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
