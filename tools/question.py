"""What an approver is asked about a call that is no shell command: an ``edit``'s unified
diff of exactly what will be written (:class:`ProposedEdit`), or a question about another
tool's call (an MCP tool's, :class:`ToolQuestion`). Values only, so the approval vocabulary
(:mod:`tools.base`) names them without loading a tool."""

from __future__ import annotations

from dataclasses import dataclass


class ToolQuestion(str):
    """``asks``: the question (``Call this MCP tool?``); ``where``: how it runs (it is not
    inside the bash sandbox); ``always``: what "always" means for it."""

    asks: str
    where: str
    always: str

    def __new__(cls, text: str, *, asks: str, where: str, always: str) -> ToolQuestion:
        question = super().__new__(cls, text)
        question.asks, question.where, question.always = asks, where, always
        return question


@dataclass(frozen=True)
class ProposedEdit:
    """An edit waiting for approval.

    ``diff`` is a git-style unified diff (``diff --git a/P b/P`` first) of the file's bytes
    as read and the bytes that will be written, every line of both: a file without a final
    newline says so (``\\ No newline at end of file``). The tool writes those bytes only if
    the file still holds what was read; otherwise it writes nothing and says so.
    """

    path: str
    """The file, relative to the workspace (as the diff names it)."""
    diff: str
    creates: bool = False
    """The file does not exist yet: the edit creates it."""
    added: int = 0
    removed: int = 0

    @property
    def summary(self) -> str:
        """``create notes.txt (+3)`` or ``edit app.py (+1 −1)``: for a title or a question."""
        verb = "create" if self.creates else "edit"
        counts = f"+{self.added}" if self.creates else f"+{self.added} −{self.removed}"
        return f"{verb} {self.path} ({counts})"
