"""How the diff screen colours a patch: per file, added lines green, removed red, the code in
them coloured by its language (guessed from the file's name). The patch is the workspace's own
text, untrusted: cleaned by the one terminal sanitizer and styled as plain
:class:`~textual.content.Content` spans, never parsed as markup.

Styling is slow (a lexer per line: about 0.1 ms a line), so it is done in a worker thread,
a line at a time and only for the lines shown (:class:`FilePart`); nothing here touches a
widget.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.token import Comment, Keyword, Name, Number, String, _TokenType, is_token_subtype
from pygments.util import ClassNotFound
from textual.content import Content

from tui.cells import cells
from tui.text import clean
from tui.view.diff_rules import line_style

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
TAB_SIZE = 8
MARKS = {
    "+": ("bold $text-success", "on $success-muted"),
    "-": ("bold $text-error", "on $error-muted"),
}
"""An added or removed line: its marker's colour, and the tint under the whole line."""


@functools.lru_cache(maxsize=64)
def lexer_for(path: str) -> Lexer | None:
    """The language of ``path`` by its name (None: unknown, shown uncoloured)."""
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def code_style(token: _TokenType) -> str:
    return next((style for kind, style in CODE_STYLES if is_token_subtype(token, kind)), "")


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


@dataclass
class FilePart:
    """One file's part of a patch (from its ``diff --git`` line). Its first :attr:`shown`
    lines are rows of the screen; any line is styled on its own (:meth:`style`), so the
    rows in view can be styled when they come into view, whatever came before them."""

    lines: list[str]
    """The file's lines of the patch, cleaned."""
    shown: int = 0
    """How many of the first lines are shown (the rest: a row saying how many more)."""
    styled: dict[int, Content] = field(default_factory=dict)
    """The lines styled so far, by index."""
    width: int = 0
    """The widest line, in cells."""
    _lexer: Lexer | None = None
    _first_hunk: int | None = None

    def __post_init__(self) -> None:
        if self.name:
            self._lexer = lexer_for(self.name)
        hunks = (n for n, line in enumerate(self.lines) if line.startswith("@@"))
        self._first_hunk = next(hunks, None)
        self.width = max(map(_width, self.lines), default=0)

    @property
    def name(self) -> str:
        """The file's path as its ``diff --git`` line says it (after ``b/``)."""
        first = self.lines[0] if self.lines else ""
        return first.rsplit(" b/", 1)[-1] if first.startswith("diff --git") else ""

    @property
    def hidden(self) -> int:
        """Lines not shown (yet)."""
        return len(self.lines) - self.shown

    def line(self, n: int) -> Content:
        """Line ``n`` as styled, or, until it is, in its line's colour only (cheap)."""
        found = self.styled.get(n)
        return found if found is not None else line_coloured(self.lines[n])

    def style(self, numbers: Iterable[int]) -> None:
        """Style lines ``numbers`` (slow, about 0.1 ms a line: off the event loop)."""
        for n in numbers:
            if n not in self.styled:
                self.styled[n] = self._style(n)

    def _style(self, n: int) -> Content:
        """Line ``n`` styled by its first characters, its code (in a hunk) by its language."""
        line = self.lines[n]
        in_hunk = self._first_hunk is not None and n > self._first_hunk
        if in_hunk and line[:1] in ("+", "-", " "):
            return _tabs(code_line(line, self._lexer), line)
        return line_coloured(line)


def line_coloured(line: str) -> Content:
    """``line`` in the colour its first characters give it (a header, a hunk's line)."""
    style = line_style(line)
    return _tabs(Content.styled(line, style) if style else Content(line), line)


def _width(line: str) -> int:
    """``line``'s width in cells (tabs expanded), quick for the usual ASCII line."""
    if "\t" in line:
        line = line.expandtabs(TAB_SIZE)
    return len(line) if line.isascii() else cells(line)


def _tabs(content: Content, line: str) -> Content:
    return content.expand_tabs(TAB_SIZE) if "\t" in line else content


def split_files(patch: str) -> list[FilePart]:
    """``patch`` cleaned and cut into its files (nothing shown or styled yet)."""
    parts: list[list[str]] = []
    for line in clean(patch).rstrip("\n").split("\n"):
        if line.startswith("diff --git") or not parts:
            parts.append([])
        parts[-1].append(line)
    return [FilePart(lines) for lines in parts]


def first_parts(patch: str, per_file: int, total: int) -> list[FilePart]:
    """``patch`` in files, each with its first ``per_file`` lines shown and styled while
    fewer than ``total`` are (then only each file's first line, which names it). Slow:
    call it off the event loop."""
    parts = split_files(patch)
    left = total
    for part in parts:
        part.shown = min(len(part.lines), max(1, min(per_file, left)))
        part.style(range(part.shown))
        left -= part.shown
    return parts
