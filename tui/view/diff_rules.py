"""The rules a patch's lines are coloured by, by how each line begins: the one table the diff
screen (:mod:`tui.diff_style`) and ``--plain``'s edit question (:mod:`tui.line.plain_edit`)
both follow. Style names are the theme's variables; nothing here draws."""

from __future__ import annotations

STYLES: tuple[tuple[str, str], ...] = (
    ("+++", "$text-muted"),
    ("---", "$text-muted"),
    ("+", "$text-success"),
    ("-", "$text-error"),
    ("@@", "$text-accent"),
    ("diff --git", "bold"),
)
"""A line's first characters and its style; the first that matches wins."""


def line_style(line: str) -> str:
    """The style of one line of a patch ("" when none applies)."""
    return next((style for head, style in STYLES if line.startswith(head)), "")
