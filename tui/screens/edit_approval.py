"""The approval modal for an ``edit`` in ``ask`` mode: the unified diff of exactly what will be
written, every secret in it masked as the diff screen masks it, coloured as the diff screen
colours a patch (:mod:`tui.diff_style`, drawn by :class:`~tui.widgets.diff_view.DiffView`,
so a diff of any length costs what a screen of it does). Answered as a command's approval
is (:mod:`tui.screens.approval`): the same keys, the same quiet moment, Esc denies."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Static

from agent.redaction import redact
from tools.question import ProposedEdit
from tui.diff_style import split_files
from tui.screens.approval import ApprovalScreen, Clock, Forward
from tui.text import clean
from tui.widgets.diff_view import DiffView


class EditApprovalScreen(ApprovalScreen):
    """Dismisses with ``once``, ``always`` or ``deny``; :attr:`edit` is what is asked about."""

    TITLE_TEXT = "Apply this edit?"
    DEFAULT_CSS = """
    EditApprovalScreen .diff-box {
        height: auto;
        max-height: 50vh;
        margin: 1 0;
        background: $boost;
    }
    """

    def __init__(
        self,
        edit: ProposedEdit,
        *,
        cwd: str = "",
        forward: Forward | None = None,
        quiet_s: float,
        clock: Clock,
    ) -> None:
        super().__init__(edit.diff, cwd=cwd, forward=forward, quiet_s=quiet_s, clock=clock)
        self.edit = edit

    def body(self) -> ComposeResult:
        edit = self.edit
        what = "creates" if edit.creates else "changes"
        counts = f"+{edit.added} −{edit.removed}"
        said = f"{what} {clean(edit.path)} ({counts})" + (f" in {self.cwd}" if self.cwd else "")
        yield Static(Content.styled(said, "$text-muted"), classes="where")
        view = DiffView(id="edit-diff")
        view.add_class("diff-box")
        parts = split_files(redact(edit.diff))  # a key in the file shows as ***, as on /diff
        for part in parts:
            part.shown = len(part.lines)  # every line: what is approved is all of it
        view.show(parts)
        yield view

    def scroll_box(self, step: int) -> None:
        self.query_one(DiffView).scroll_relative(y=step, animate=False)
