"""The approval modal for bash in ``ask`` mode: the command byte for byte, every line; allow
once, always for this session, or deny. The turn waits for the answer. It says whether the
command will run sandboxed.

What the person reads is what runs: escapes and invisible characters are shown as escape
notation and highlighted, a command of several lines is numbered with its line count above
it (:mod:`tui.widgets.command`).

Keys typed into the agent's prompt must not answer it: the dialog ignores its keys until it
has been on screen for :data:`ARM_S` seconds with no typing, and what is typed before that
goes on into the prompt (steering stays steering). "Always" takes a deliberate key, ctrl+a;
Esc denies at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Static

from tools.base import ApprovalDecision
from tui.text import clean, command_shape, short_path
from tui.widgets.command import command_content

ARM_S = 0.6
"""Quiet time before the dialog takes keys."""

Forward = Callable[[str], None]
"""Takes what was typed before the dialog was armed: a character, ``"\\n"`` (Enter) or
``"\\b"`` (Backspace)."""


class ApprovalScreen(ModalScreen[ApprovalDecision]):
    """Dismisses with ``once``, ``always`` or ``deny``."""

    AUTO_FOCUS = ""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "decide('once')", "allow once", show=False),
        Binding("ctrl+a", "decide('always')", "always", show=False),
        Binding("n", "decide('deny')", "deny", show=False),
        Binding("escape", "deny", "deny", show=False),
    ]

    def __init__(
        self,
        command: str,
        cwd: str = "",
        forward: Forward | None = None,
        arm_s: float = ARM_S,
        sandbox: str = "",
    ) -> None:
        super().__init__(classes="modal")
        self.arm_s = arm_s
        """Quiet seconds before the dialog takes keys (:data:`ARM_S` by default)."""
        self.command = command
        """Exactly what will run (shown through :func:`command_content`)."""
        self.cwd = short_path(clean(cwd))
        self.sandbox = sandbox
        """How it will run: ``sandboxed (workspace-write, no network)`` or ``unsandboxed``
        (:meth:`tools.sandbox.SandboxChoice.describe`)."""
        self.forward = forward
        self.armed = False
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog -approval") as dialog:
            dialog.border_title = "Run this command?"
            if self.cwd:
                yield Static(Content.styled(f"in {self.cwd}", "$text-muted"), classes="where")
            if self.sandbox.startswith("sandboxed"):
                yield Static(Content.styled(f"runs {self.sandbox}", "$text-muted"), classes="jail")
            elif self.sandbox:
                said = f"runs {self.sandbox}: as you, with your files and your network"
                yield Static(Content.styled(said, "$text-warning"), classes="jail")
            shape = command_shape(self.command)
            if shape:
                yield Static(Content.styled(f"⚠ {shape}", "$text-warning"), classes="shape")
            with VerticalScroll(classes="command-box"):
                yield Static(command_content(self.command), classes="command")
            with Horizontal(classes="buttons"):
                yield Button("Allow once  y", id="once", variant="primary", disabled=True)
                yield Button("Always this session  ctrl+a", id="always", variant="warning",
                             disabled=True)  # fmt: skip
                yield Button("Deny  n", id="deny", variant="error", disabled=True)

    def on_mount(self) -> None:
        self._restart()

    def _restart(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(self.arm_s, self._arm)

    def _arm(self) -> None:
        self.armed = True
        for button in self.query(Button):
            button.disabled = False
        self.query_one("#once", Button).focus()

    def on_key(self, event: events.Key) -> None:
        if self.armed:
            return
        # Not armed yet: this was typed for the prompt behind the dialog.
        event.stop()
        event.prevent_default()
        self._typed(event)

    def _typed(self, event: events.Key | None, char: str | None = None) -> None:
        text = char
        if event is not None:
            if event.key == "enter":
                text = "\n"
            elif event.key == "backspace":
                text = "\b"
            elif event.is_printable and event.character:
                text = event.character
        if text is not None and self.forward is not None:
            self.forward(text)
        self._restart()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if self.armed:
            self.action_decide(event.button.id or "deny")

    def action_decide(self, decision: str) -> None:
        if not self.armed:
            # A binding caught a key typed for the prompt ("y" of "yes, and…").
            self._typed(None, {"once": "y", "deny": "n"}.get(decision))
            return
        choice: ApprovalDecision = decision if decision in ("once", "always") else "deny"  # type: ignore[assignment]
        self.dismiss(choice)

    def action_deny(self) -> None:
        """Esc denies at once, armed or not: denying is always safe."""
        self.dismiss("deny")
