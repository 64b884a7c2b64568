"""An edit's diff as ``--plain`` prints it in the approval question: every line, cleaned by the
one terminal filter, coloured on a terminal by the rules the diff screen colours a patch by
(:mod:`tui.view.diff_rules`: added green, removed red, hunks in the accent colour)."""

from __future__ import annotations

from typing import TextIO

from tui.text import clean
from tui.view.diff_rules import line_style

SGR = {
    "$text-muted": "2",
    "$text-success": "32",
    "$text-error": "31",
    "$text-accent": "36",
    "bold": "1",
}
"""The diff screen's styles as terminal colours (the theme's variables have none here)."""


def diff_rows(diff: str, *, colour: bool) -> list[str]:
    """``diff``'s lines, cleaned; with ``colour``, each wrapped in its style's SGR codes."""
    rows = []
    for line in clean(diff).rstrip("\n").split("\n"):
        style = line_style(line)
        code = SGR.get(style) if colour else None
        rows.append(f"\x1b[{code}m{line}\x1b[0m" if code else line)
    return rows


def write_diff(out: TextIO, diff: str) -> None:
    """Every row of ``diff`` on ``out``, indented, coloured when ``out`` is a terminal; a
    terminal that is gone is no error (as :meth:`tui.line.repl.PlainRepl.say`)."""
    try:
        rows = diff_rows(diff, colour=out.isatty())
        out.write("".join(f"  {row}\n" for row in rows))
        out.flush()
    except (OSError, ValueError):
        pass
