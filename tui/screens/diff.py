"""The diff of one command: per file, added lines green, removed red, the code in them
coloured by its language (guessed from the file's name). The patch is the workspace's own
text, untrusted: cleaned by the one terminal sanitizer and shown as plain
:class:`~textual.content.Content` spans, never parsed as markup."""

from __future__ import annotations

import functools
from typing import ClassVar

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.token import Comment, Keyword, Name, Number, String, _TokenType
from pygments.util import ClassNotFound
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.text import clean

STYLES = (("+++", "$text-muted"), ("---", "$text-muted"), ("+", "$text-success"))
STYLES += (("-", "$text-error"), ("@@", "$text-accent"), ("diff --git", "bold"))
CODE_STYLES: tuple[tuple[_TokenType, str], ...] = (
    (Comment, "italic $text-muted"),
    (String, "$text-warning"),
    (Number, "$text-secondary"),
    (Keyword, "bold $text-accent"),
    (Name.Function, "$text-primary"),
    (Name.Class, "bold $text-primary"),
)
"""Code colours by token kind, on top of the line's own (added, removed, unchanged)."""
LONGEST_HIGHLIGHTED = 2_000
"""Longer lines are shown plain: colouring them is slow and shows nothing useful."""


@functools.lru_cache(maxsize=64)
def lexer_for(path: str) -> Lexer | None:
    """The language of ``path`` by its name (None: unknown, shown uncoloured)."""
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def code_style(token: _TokenType) -> str:
    return next((style for kind, style in CODE_STYLES if token in kind), "")


MARKS = {
    "+": ("bold $text-success", "on $success-muted"),
    "-": ("bold $text-error", "on $error-muted"),
}
"""An added or removed line: its marker's colour, and the tint under the whole line."""


def code_line(text: str, lexer: Lexer | None) -> Content:
    """One line of a hunk: its marker (``+``, ``-`` or a space) in the line's colour, the
    line tinted as added or removed, and its code coloured by token kind on the tint."""
    mark, tint = MARKS.get(text[:1], ("", ""))
    if lexer is None or len(text) > LONGEST_HIGHLIGHTED:
        code = [(text[1:], f"{mark.split()[-1]} {tint}".strip() if mark else "")]
    else:
        code = [
            (value, f"{code_style(token)} {tint}".strip())
            for token, value in lexer.get_tokens(text[1:])
        ]
    parts = [(text[:1], f"{mark} {tint}".strip()), *code]
    return Content.assemble(*((value, style) if style else value for value, style in parts))


def diff_content(patch: str) -> Content:
    """``patch`` cleaned, each line styled by its first characters, the code in a file's
    hunks coloured by the language its name says."""
    lines = []
    lexer: Lexer | None = None
    in_hunk = False
    for line in clean(patch).rstrip("\n").split("\n"):
        if line.startswith("diff --git"):
            lexer, in_hunk = lexer_for(line.rsplit(" b/", 1)[-1]), False
        elif line.startswith("@@"):
            in_hunk = True
        style = next((s for head, s in STYLES if line.startswith(head)), "")
        if in_hunk and line[:1] in ("+", "-", " "):
            lines.append(code_line(line, lexer))
        else:
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
