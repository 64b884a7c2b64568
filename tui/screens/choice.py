"""A question with a few answers (``/rewind``: conversation only, or files too; ``/remember``:
the line and the file it goes to, yes or no)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class ChoiceScreen(ModalScreen[int | None]):
    """Dismisses with the index of the chosen answer, or None (Esc)."""

    AUTO_FOCUS = "OptionList"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss", "cancel")]

    def __init__(
        self,
        question: str,
        answers: Sequence[str],
        *,
        detail: str = "",
        keys: Sequence[str] = (),
    ) -> None:
        """``detail``: shown above the answers (what a yes would write); ``keys``: one key
        per answer that picks it at once."""
        super().__init__(classes="modal")
        self.question = question
        self.answers = list(answers)
        self.detail = detail
        self.keys = list(keys)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -sessions") as dialog:
            dialog.border_title = self.question
            dialog.border_subtitle = "enter chooses · esc cancels"
            if self.detail:
                yield Static(Content(self.detail), classes="command-box")
            yield OptionList(*(Option(a, id=str(i)) for i, a in enumerate(self.answers)))

    def on_key(self, event: events.Key) -> None:
        if event.key in self.keys:
            event.stop()
            self.dismiss(self.keys.index(event.key))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id or 0))

    async def action_dismiss(self, result: int | None = None) -> None:
        self.dismiss(result)
