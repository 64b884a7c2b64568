"""Terminal cells: how wide text is on screen (wide CJK and emoji count 2, combining marks 0),
and text cut or padded to a width, for tables that line up."""

from __future__ import annotations

import unicodedata


def _char_cells(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cells(text: str) -> int:
    """Terminal cells ``text`` takes: wide (CJK, emoji) characters count 2, combining 0."""
    return sum(_char_cells(ch) for ch in text)


def fit(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` cells, ending in ``…`` when cut."""
    if cells(text) <= width:
        return text
    if width <= 0:
        return ""
    out: list[str] = []
    used = 0
    for ch in text:
        w = _char_cells(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cells(text))


# --- the timeline table -------------------------------------------------------------------------
