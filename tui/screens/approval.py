"""The approval modal for bash in ``ask`` mode: the command in full; allow once, always for
this session, or deny. The turn waits for the answer."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from tools.base import ApprovalDecision
from tui.widgets.format import clean


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Dismisses with ``once``, ``always`` or ``deny``."""

    AUTO_FOCUS = "#once"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('once')", "allow once"),
        Binding("a", "decide('always')", "always"),
        Binding("n,escape", "decide('deny')", "deny"),
    ]

    def __init__(self, command: str, cwd: str = "") -> None:
        super().__init__(classes="modal")
        self.command = clean(command)
        self.cwd = clean(cwd)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -approval") as dialog:
            dialog.border_title = "Run this command?"
            if self.cwd:
                yield Static(Content.styled(f"in {self.cwd}", "$text-muted"), classes="where")
            with VerticalScroll(classes="command-box"):
                yield Static(Content("$ " + self.command), classes="command")
            with Horizontal(classes="buttons"):
                yield Button("Allow once  y", id="once", variant="primary")
                yield Button("Always this session  a", id="always", variant="warning")
                yield Button("Deny  n", id="deny", variant="error")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_decide(event.button.id or "deny")

    def action_decide(self, decision: str) -> None:
        choice: ApprovalDecision = decision if decision in ("once", "always") else "deny"  # type: ignore[assignment]
        self.dismiss(choice)
